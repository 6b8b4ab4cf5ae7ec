package dev.outbox.spi;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BackoffTest {
    private final Backoff backoff = Backoff.exponential(Duration.ofMillis(100), Duration.ofSeconds(1));

    @Test
    void doublesFromTheFirstWaitUpToTheLongest() {
        assertThat(backoff.delay(1)).isEqualTo(Duration.ofMillis(100));
        assertThat(backoff.delay(2)).isEqualTo(Duration.ofMillis(200));
        assertThat(backoff.delay(4)).isEqualTo(Duration.ofMillis(800));
        assertThat(backoff.delay(5)).isEqualTo(Duration.ofSeconds(1));
        assertThat(backoff.delay(Integer.MAX_VALUE)).isEqualTo(Duration.ofSeconds(1));
        assertThat(backoff.delay(0)).as("below the first attempt").isEqualTo(Duration.ofMillis(100));
    }

    @Test
    void equalJitterTakesOffAtMostHalf() {
        assertThat(backoff.delay(2, 0)).isEqualTo(Duration.ofMillis(100));
        assertThat(backoff.delay(2, 0.5)).isEqualTo(Duration.ofMillis(150));
        assertThat(backoff.delay(2, 0.999)).isLessThan(Duration.ofMillis(200)).isGreaterThan(Duration.ofMillis(199));
        assertThat(backoff.delay(2, Double.NaN)).as("a jitter out of range counts as 0").isEqualTo(Duration.ofMillis(100));
    }

    @Test
    void aSequenceDoublesUntilReset() {
        Backoff.Sequence s = backoff.sequence();
        assertThat(s.next()).isEqualTo(Duration.ofMillis(100));
        assertThat(s.next()).isEqualTo(Duration.ofMillis(200));
        assertThat(s.failures()).isEqualTo(2);
        s.reset();
        assertThat(s.next()).isEqualTo(Duration.ofMillis(100));
    }

    @Test
    void badBoundsAreRefusedNamingTheValue() {
        assertThatThrownBy(() -> Backoff.exponential(Duration.ZERO, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> Backoff.exponential(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT1S");
    }
}
