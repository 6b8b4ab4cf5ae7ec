package dev.outbox.internal;

import dev.outbox.spi.Heartbeat;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

class NeliStateMachineTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    private static final Duration INTERVAL = Duration.ofMillis(100);

    private final MutableClock clock = new MutableClock();
    private final List<String> events = new ArrayList<>();
    private final UUID me = UUID.randomUUID();
    private NeliStateMachine machine;
    /** Whether the transport this test plays can reconfirm an assignment ({@link NeliStateMachine.Actions#reconfirm}). */
    private boolean canReconfirm;

    @BeforeEach
    void setUp() {
        machine = new NeliStateMachine(me, TIMEOUT, INTERVAL, clock::nanos, new NeliStateMachine.Actions() {
            @Override
            public void acquired(UUID leaderId) {
                events.add("acquired " + leaderId);
            }

            @Override
            public void fenced() {
                events.add("fenced");
            }

            @Override
            public void revoked() {
                events.add("revoked");
            }

            @Override
            public boolean reconfirm() {
                events.add("reconfirm");
                return canReconfirm;
            }
        });
    }

    @Test
    void standbyUntilAssignedAndSendsNoHeartbeats() {
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.STANDBY);
        assertThat(machine.tick()).isNull();
        machine.heartbeat(new Heartbeat(me, 1));
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.STANDBY);
        assertThat(events).isEmpty();
    }

    @Test
    void assignmentMakesALeaderWithAFreshIdAndHeartbeatsEveryInterval() {
        machine.assigned();
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.LEADER);
        assertThat(events).containsExactly("acquired " + machine.leaderId());
        Heartbeat first = machine.tick();
        assertThat(first.instanceId()).isEqualTo(me);
        assertThat(machine.tick()).as("not due yet").isNull();
        clock.advance(INTERVAL);
        assertThat(machine.tick().sequence()).isGreaterThan(first.sequence());
    }

    @Test
    void missingOwnHeartbeatsFenceAfterTheTimeoutAndNotBefore() {
        machine.assigned();
        clock.advance(TIMEOUT);
        machine.tick();
        assertThat(machine.role()).as("exactly at the timeout").isEqualTo(NeliStateMachine.Role.LEADER);
        clock.advance(Duration.ofMillis(1));
        machine.tick();
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.FENCED);
        assertThat(machine.leaderId()).isNull();
        assertThat(events).endsWith("fenced", "reconfirm");
    }

    @Test
    void ownHeartbeatsKeepLeadershipOthersDoNot() {
        machine.assigned();
        UUID id = machine.leaderId();
        for (int i = 0; i < 100; i++) {
            clock.advance(INTERVAL);
            Heartbeat hb = machine.tick();
            if (hb != null) {
                machine.heartbeat(hb);
            }
            machine.heartbeat(new Heartbeat(UUID.randomUUID(), 1_000 + i)); // someone else's: ignored
        }
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.LEADER);
        assertThat(machine.leaderId()).isEqualTo(id);
        clock.advance(TIMEOUT.plusMillis(1));
        machine.heartbeat(new Heartbeat(UUID.randomUUID(), 5_000));
        machine.tick();
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.FENCED);
    }

    @Test
    void heartbeatSentAfterTheFenceAndAPollRestoresLeadershipWithANewId() {
        machine.assigned();
        UUID first = machine.leaderId();
        Heartbeat beforeFence = machine.tick();
        clock.advance(TIMEOUT.plusSeconds(1));
        Heartbeat atFence = machine.tick(); // fences, then sends the next heartbeat
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.FENCED);
        machine.heartbeat(beforeFence);
        assertThat(machine.role()).as("a heartbeat sent before the fence proves nothing")
                .isEqualTo(NeliStateMachine.Role.FENCED);
        machine.heartbeat(atFence);
        assertThat(machine.role()).as("nor one sent before any poll completed since the fence")
                .isEqualTo(NeliStateMachine.Role.FENCED);
        machine.polled();
        clock.advance(INTERVAL);
        Heartbeat afterPoll = machine.tick();
        machine.heartbeat(afterPoll);
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.LEADER);
        assertThat(machine.leaderId()).isNotNull().isNotEqualTo(first);
        assertThat(events).containsExactly("acquired " + first, "fenced", "reconfirm",
                "acquired " + machine.leaderId());
    }

    /**
     * A leader paused past its lease (SIGSTOP, a VM pause) resumes with a stale view of the group: its first polls may
     * complete before its consumer has heard that the group moved on, and its own heartbeats still arrive. With a
     * transport that can reconfirm, neither restores it: only heartbeats sent after the group confirmed the
     * assignment do.
     */
    @Test
    void aFencedLeaderWhoseTransportReconfirmsLeadsAgainOnlyAfterTheConfirmation() {
        canReconfirm = true;
        machine.assigned();
        UUID first = machine.leaderId();
        machine.tick();
        clock.advance(TIMEOUT.plusSeconds(1));
        machine.tick(); // fences and asks for a confirmation
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.FENCED);
        assertThat(events).containsExactly("acquired " + first, "fenced", "reconfirm");
        for (int i = 0; i < 5; i++) { // polls complete, own heartbeats arrive: not enough
            machine.polled();
            clock.advance(INTERVAL);
            Heartbeat hb = machine.tick();
            machine.heartbeat(hb);
            assertThat(machine.role()).as("poll %d after the fence, before the confirmation", i)
                    .isEqualTo(NeliStateMachine.Role.FENCED);
        }
        clock.advance(INTERVAL);
        Heartbeat beforeConfirmation = machine.tick();
        machine.confirmed();
        machine.heartbeat(beforeConfirmation);
        assertThat(machine.role()).as("a heartbeat sent before the confirmation proves nothing")
                .isEqualTo(NeliStateMachine.Role.FENCED);
        clock.advance(INTERVAL);
        machine.heartbeat(machine.tick());
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.LEADER);
        assertThat(machine.leaderId()).isNotNull().isNotEqualTo(first);
    }

    @Test
    void aFencedLeaderThatLostItsAssignmentWhileConfirmingStandsByAndAStrayConfirmationIsIgnored() {
        canReconfirm = true;
        machine.assigned();
        machine.tick();
        clock.advance(TIMEOUT.plusSeconds(1));
        machine.tick();
        machine.lost(); // the rejoin found that the group had moved on
        machine.confirmed();
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.STANDBY);
        machine.assigned(); // given the partition again later: leads at once, as any assignment does
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.LEADER);
        machine.confirmed(); // a late answer changes nothing
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.LEADER);
    }

    @Test
    void aHeartbeatArrivingAfterTheLeaseLapsedFencesInsteadOfExtendingIt() {
        machine.assigned();
        Heartbeat old = machine.tick();
        clock.advance(TIMEOUT.plusSeconds(3)); // the driving thread stalled: no tick ran
        assertThat(machine.leaseValid(clock.nanos())).isFalse();
        machine.heartbeat(old);                // the first poll after the stall returns an old heartbeat
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.FENCED);
        assertThat(machine.leaseLeftNanos(clock.nanos())).isEqualTo(Long.MIN_VALUE);
        assertThat(events).endsWith("fenced", "reconfirm");
    }

    @Test
    void leaseFollowsOwnHeartbeats() {
        assertThat(machine.leaseValid(clock.nanos())).isFalse();
        machine.assigned();
        assertThat(machine.leaseLeftNanos(clock.nanos())).isEqualTo(TIMEOUT.toNanos());
        clock.advance(Duration.ofSeconds(1));
        machine.heartbeat(machine.tick());
        assertThat(machine.leaseLeftNanos(clock.nanos())).isEqualTo(TIMEOUT.toNanos());
        assertThat(machine.leaseValid(clock.nanos() + TIMEOUT.toNanos())).isTrue();
        assertThat(machine.leaseValid(clock.nanos() + TIMEOUT.toNanos() + 1)).isFalse();
        machine.revoked();
        assertThat(machine.leaseValid(clock.nanos())).isFalse();
    }

    @Test
    void leasesAreMeasuredOnTheMonotonicClockNotTheWallClock() {
        machine.assigned();
        clock.stepWallClock(Duration.ofHours(1));    // an NTP step forwards
        machine.tick();
        assertThat(machine.role()).as("a wall-clock step forwards does not fence").isEqualTo(
                NeliStateMachine.Role.LEADER);
        clock.stepWallClock(Duration.ofHours(-2));   // and backwards
        clock.advance(TIMEOUT.plusMillis(1));         // while no heartbeat arrives for longer than the timeout
        assertThat(machine.leaseValid(clock.nanos())).as("a step backwards does not stretch the lease").isFalse();
        machine.tick();
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.FENCED);
    }

    @Test
    void revocationOfALeaderDrainsThenStandsBy() {
        machine.assigned();
        machine.revoked();
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.STANDBY);
        assertThat(events).last().isEqualTo("revoked");
        assertThat(machine.tick()).isNull();
    }

    @Test
    void revocationOfAFencedInstanceNeedsNoDrain() {
        machine.assigned();
        clock.advance(TIMEOUT.plusSeconds(1));
        machine.tick();
        machine.revoked();
        assertThat(events).containsExactly("acquired " + events.get(0).substring(9), "fenced", "reconfirm");
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.STANDBY);
    }

    @Test
    void lossFencesAtOnce() {
        machine.assigned();
        machine.lost();
        assertThat(machine.role()).isEqualTo(NeliStateMachine.Role.STANDBY);
        assertThat(events).last().isEqualTo("fenced");
    }

    @Test
    void reassignmentNeverReusesALeaderId() {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            machine.assigned();
            ids.add(machine.leaderId());
            machine.revoked();
        }
        assertThat(ids).doesNotHaveDuplicates().doesNotContainNull();
    }

    /** A clock tests move by hand. */
    static final class MutableClock extends Clock {
        private Instant now = Instant.parse("2026-01-01T00:00:00Z");
        private long nanos = 123_456_789L;

        /** Moves both the wall clock and the monotonic clock. */
        void advance(Duration d) {
            now = now.plus(d);
            nanos += d.toNanos();
        }

        /** Steps the wall clock only, as an NTP correction or an operator would; the monotonic clock runs on. */
        void stepWallClock(Duration d) {
            now = now.plus(d);
        }

        /** The monotonic clock, as {@link System#nanoTime()}. */
        long nanos() {
            return nanos;
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
}
