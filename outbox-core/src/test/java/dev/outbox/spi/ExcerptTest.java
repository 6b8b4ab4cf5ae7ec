package dev.outbox.spi;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ExcerptTest {

    @Test
    void aShortTextStaysWholeAndALongOneKeepsItsStartAndLength() {
        assertThat(Excerpt.of("order-42")).isEqualTo("order-42");
        assertThat(Excerpt.of("x".repeat(100))).hasSize(100);
        assertThat(Excerpt.of("x".repeat(2_100_000))).isEqualTo("x".repeat(100) + "…(2,100,000 characters)");
        assertThat(Excerpt.of(null)).isEqualTo("null");
    }

    @Test
    void aCharacterIsNeverCutInTwo() {
        String text = "a".repeat(9) + "\uD83D\uDE00" + "b".repeat(20); // an emoji across the cut at 10
        assertThat(Excerpt.of(text, 10)).startsWith("a".repeat(9) + "…(");
    }

    @Test
    void aMaximumBelowOneIsRefused() {
        assertThatThrownBy(() -> Excerpt.of("x", 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0");
    }
}
