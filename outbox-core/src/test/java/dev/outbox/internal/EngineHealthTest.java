package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth.Status;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** The engine's health, driven step by step as the engine's threads would. */
class EngineHealthTest {
    private static final Instant T0 = Instant.parse("2026-11-27T00:00:00Z");
    private final MovingClock clock = new MovingClock();
    private final EngineHealth health = new EngineHealth(clock);

    /** A clock the test moves by hand. */
    private static final class MovingClock extends Clock {
        private Instant now = T0;

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    @Test
    void theStatusFollowsTheElectionAndLeadership() {
        assertThat(health.status(Dispatcher.State.NEW)).isEqualTo(Status.STARTING);
        assertThat(health.status(Dispatcher.State.RUNNING)).isEqualTo(Status.STARTING);
        health.electionJoined();
        assertThat(health.status(Dispatcher.State.RUNNING)).isEqualTo(Status.STANDBY);
        UUID id = UUID.randomUUID();
        health.leading(id);
        assertThat(health.status(Dispatcher.State.RUNNING)).isEqualTo(Status.LEADER);
        assertThat(health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0).leaderId()).contains(id);
        health.notLeading();
        health.fenced(true);
        assertThat(health.status(Dispatcher.State.RUNNING)).isEqualTo(Status.FENCED);
        health.leading(UUID.randomUUID());
        assertThat(health.status(Dispatcher.State.RUNNING)).as("a new leadership ends the fence")
                .isEqualTo(Status.LEADER);
        assertThat(health.status(Dispatcher.State.CLOSED)).isEqualTo(Status.CLOSED);
    }

    @Test
    void aChangedStatusIsToldOnce() {
        assertThat(health.changedStatus(Dispatcher.State.NEW)).as("STARTING, as at first").isNull();
        health.electionJoined();
        assertThat(health.changedStatus(Dispatcher.State.RUNNING)).isEqualTo(Status.STANDBY);
        assertThat(health.changedStatus(Dispatcher.State.RUNNING)).isNull();
    }

    @Test
    void anOutageIsSaidAtWarnOnceAMinuteAndEndsWithItsStart() {
        health.leading(UUID.randomUUID());
        assertThat(health.outageBegan(T0)).isTrue();
        assertThat(health.outageBegan(T0.plusSeconds(30))).isFalse();
        assertThat(health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0).outageSince()).contains(T0.plusSeconds(30));
        assertThat(health.outageBegan(T0.plusSeconds(60))).isTrue();
        assertThat(health.outageEnded()).isEqualTo(T0.plusSeconds(60));
        assertThat(health.outageEnded()).isNull();
    }

    @Test
    void theLeadersFiguresAreReportedOnlyWhileLeading() {
        health.failed("purge", "IOException: gone", T0);
        health.outageBegan(T0);
        assertThat(health.report(Dispatcher.State.RUNNING, 3, 1, 2, 1).outageSince()).isEmpty();
        assertThat(health.report(Dispatcher.State.RUNNING, 3, 1, 2, 1).heldKeys()).isZero();
        assertThat(health.report(Dispatcher.State.RUNNING, 3, 1, 2, 1).lastFailure()).isPresent();
    }

    /** #42: reads failing since when, and the time since the last successful read, while leading only. */
    @Test
    void aLeaderWhoseReadsFailIsNotUpSaysSinceWhenAndTheTimeSinceItsLastReadGrows() {
        health.electionJoined();
        health.leading(UUID.randomUUID());
        clock.advance(Duration.ofSeconds(2));
        assertThat(health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0).sinceLastRead())
                .as("before the first read: since leadership began").contains(Duration.ofSeconds(2));
        health.marked(clock.instant());
        clock.advance(Duration.ofMillis(100));
        var up = health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0);
        assertThat(up.isUp()).isTrue();
        assertThat(up.sinceLastRead()).contains(Duration.ofMillis(100));

        Instant failedAt = clock.instant();
        health.readFailed(failedAt);
        clock.advance(Duration.ofSeconds(20));
        health.readFailed(clock.instant());
        var down = health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0);
        assertThat(down.status()).isEqualTo(Status.LEADER);
        assertThat(down.isUp()).isFalse();
        assertThat(down.storeUnreachableSince()).as("the first failure").contains(failedAt);
        assertThat(down.sinceLastRead()).contains(Duration.ofMillis(20_100));

        health.marked(clock.instant());
        var back = health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0);
        assertThat(back.isUp()).isTrue();
        assertThat(back.storeUnreachableSince()).isEmpty();
        assertThat(back.sinceLastRead()).contains(Duration.ZERO);

        health.readFailed(clock.instant());
        health.notLeading();
        var standby = health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0);
        assertThat(standby.status()).isEqualTo(Status.STANDBY);
        assertThat(standby.isUp()).isTrue();
        assertThat(standby.storeUnreachableSince()).isEmpty();
        assertThat(standby.sinceLastRead()).isEmpty();
        health.leading(UUID.randomUUID());
        assertThat(health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0).storeUnreachableSince())
                .as("a new leadership starts clean").isEmpty();
    }

    /** #42: a broker outage takes a leader out of up, as its store does. */
    @Test
    void aLeaderInABrokerOutageIsNotUp() {
        health.electionJoined();
        health.leading(UUID.randomUUID());
        health.outageBegan(T0);
        assertThat(health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0).isUp()).isFalse();
        health.outageEnded();
        assertThat(health.report(Dispatcher.State.RUNNING, 0, 0, 0, 0).isUp()).isTrue();
    }

    /** #42: a fenced instance whose leadership the group moved on is a standby again. */
    @Test
    void aFencedInstanceNoLongerAssignedIsAStandbyAgain() {
        health.electionJoined();
        health.leading(UUID.randomUUID());
        health.notLeading();
        health.fenced(true);
        assertThat(health.status(Dispatcher.State.RUNNING)).isEqualTo(Status.FENCED);
        assertThat(health.unfenced()).isTrue();
        assertThat(health.status(Dispatcher.State.RUNNING)).isEqualTo(Status.STANDBY);
        assertThat(health.unfenced()).as("once").isFalse();
    }
}
