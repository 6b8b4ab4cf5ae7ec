package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth.Status;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** The engine's health, driven step by step as the engine's threads would. */
class EngineHealthTest {
    private static final Instant T0 = Instant.parse("2026-11-27T00:00:00Z");
    private final EngineHealth health = new EngineHealth();

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
}
