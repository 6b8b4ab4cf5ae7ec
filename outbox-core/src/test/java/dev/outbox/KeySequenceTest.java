package dev.outbox;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KeySequenceTest {

    @Test
    void numbersAndListsRoundTripAsAsciiDecimals() {
        assertThat(new String(KeySequence.encode(42), StandardCharsets.US_ASCII)).isEqualTo("42");
        assertThat(KeySequence.decode(KeySequence.SEQUENCE, KeySequence.encode(Long.MAX_VALUE))).isEqualTo(Long.MAX_VALUE);
        assertThat(new String(KeySequence.encodeList(List.of(3L, 4L, 9L)), StandardCharsets.US_ASCII)).isEqualTo("3,4,9");
        assertThat(KeySequence.decodeList(KeySequence.encodeList(List.of(3L, 4L, 9L)))).containsExactly(3L, 4L, 9L);
        assertThat(KeySequence.decodeList(new byte[0])).isEmpty();
    }

    @Test
    void aBadValueIsNamed() {
        assertThatThrownBy(() -> KeySequence.decode(KeySequence.SEQUENCE, "4x".getBytes(StandardCharsets.US_ASCII)))
                .hasMessageContaining(KeySequence.SEQUENCE).hasMessageContaining("'4x'");
        assertThatThrownBy(() -> KeySequence.decodeList("1,,2".getBytes(StandardCharsets.US_ASCII)))
                .hasMessageContaining(KeySequence.SKIPPED).hasMessageContaining("'1,,2'");
    }

    @Test
    void theLastHeaderOfANameWins() {
        List<Header> headers = List.of(Header.of(KeySequence.SEQUENCE, "1"), Header.of("other", "x"),
                Header.of(KeySequence.SEQUENCE, "2"));
        assertThat(KeySequence.decode(KeySequence.SEQUENCE, KeySequence.last(headers, KeySequence.SEQUENCE))).isEqualTo(2);
        assertThat(KeySequence.last(headers, KeySequence.REPLAYED)).isNull();
    }
}
