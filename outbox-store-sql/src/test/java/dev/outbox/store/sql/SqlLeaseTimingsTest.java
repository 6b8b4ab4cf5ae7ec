package dev.outbox.store.sql;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The database lease's timings: the defaults derived from the dispatcher's, and each broken relation named. */
class SqlLeaseTimingsTest {
    private static final Duration HB = Duration.ofSeconds(5);
    private static final Duration POLL = Duration.ofMillis(100);
    private static final Duration DELIVERY = Duration.ofSeconds(8);

    @Test
    void defaultsFollowTheHeartbeatTimeoutAndSayWhatTheyCost() {
        SqlLeaseTimings t = SqlLeaseTimings.of(HB, POLL, DELIVERY, null, null, null);
        assertThat(t.renewInterval()).isEqualTo(Duration.ofMillis(1250));
        assertThat(t.leaseDuration()).isEqualTo(Duration.ofSeconds(15)); // max(3 × 5 s, 5 + 8 + 1.25 s)
        assertThat(t.acquireInterval()).isEqualTo(Duration.ofMillis(500));
        assertThat(t.crashTakeOver()).isEqualTo(Duration.ofMillis(15_600));
        assertThat(t.cleanHandOver()).isEqualTo(Duration.ofMillis(600));
        // A long delivery timeout lengthens the lease: the relation, not three heartbeat timeouts, sets it.
        assertThat(SqlLeaseTimings.of(HB, POLL, Duration.ofSeconds(30), null, null, null).leaseDuration())
                .isEqualTo(Duration.ofMillis(36_250));
        // A poll interval above 500 ms: standbys try every poll.
        assertThat(SqlLeaseTimings.of(HB, Duration.ofSeconds(1), DELIVERY, null, Duration.ofSeconds(1), null)
                .acquireInterval()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void aRenewIntervalTooLongForTheHeartbeatTimeoutIsRefusedByName() {
        assertThatThrownBy(() -> SqlLeaseTimings.of(HB, POLL, DELIVERY, null, Duration.ofMillis(2451), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("renewInterval (2451 ms) must be at most (heartbeatTimeout (5000 ms) -"
                        + " pollInterval (100 ms)) / 2 = 2450 ms");
        assertThat(SqlLeaseTimings.of(HB, POLL, DELIVERY, null, Duration.ofMillis(2450), null).renewInterval())
                .isEqualTo(Duration.ofMillis(2450));
    }

    @Test
    void aLeaseShorterThanACutOffLeaderNeedsToStopIsRefusedByName() {
        assertThatThrownBy(() -> SqlLeaseTimings.of(HB, POLL, DELIVERY, Duration.ofMillis(14_249), null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("leaseDuration (14249 ms) must be at least heartbeatTimeout (5000 ms) +"
                        + " deliveryTimeout (8000 ms) + renewInterval (1250 ms) = 14250 ms")
                .hasMessageContaining("before a cut-off leader has fenced itself and its last sends have settled");
        assertThat(SqlLeaseTimings.of(HB, POLL, DELIVERY, Duration.ofMillis(14_250), null, null).leaseDuration())
                .isEqualTo(Duration.ofMillis(14_250));
    }

    @Test
    void aMissingOrNonPositiveSettingIsRefusedByName() {
        assertThatThrownBy(() -> SqlLeaseTimings.of(HB, POLL, DELIVERY, null, null, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("acquireInterval must be at least");
        assertThatThrownBy(() -> SqlLeaseTimings.of(HB, POLL, null, null, null, null))
                .isInstanceOf(NullPointerException.class).hasMessageStartingWith("deliveryTimeout");
    }
}
