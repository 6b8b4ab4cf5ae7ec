package dev.outbox.internal;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * NELI leader election as pure logic: fed membership events and heartbeats by a {@link LeaderTransport} and
 * time by a {@link Clock}, it decides when this instance leads and tells its {@link Actions}.
 *
 * <ul>
 *   <li>Assigned the leader partition → leader with a fresh leader id.</li>
 *   <li>Leader and no own heartbeat seen for longer than the heartbeat timeout → fenced: stop publishing at
 *       once (the partition may be reassigned soon).</li>
 *   <li>Fenced, still assigned, and an own heartbeat sent <em>after</em> the fence arrives → leader again
 *       with a new id (an old id is never reused).</li>
 *   <li>Revoked → the revocation waits while the actions drain in-flight work, then standby.</li>
 *   <li>Lost → fenced, then standby.</li>
 * </ul>
 *
 * <p>Not thread-safe: driven from one thread (the dispatcher's leader thread), which also calls
 * {@link #tick()} at least once per heartbeat interval.
 */
public final class NeliStateMachine implements LeaderTransport.Listener {

    /** What this instance is doing. */
    public enum Role {
        /** Not assigned the leader partition. */
        STANDBY,
        /** Assigned and heartbeats flowing: may publish. */
        LEADER,
        /** Assigned, but its own heartbeats stopped arriving: must not publish. */
        FENCED
    }

    /** Reactions to leadership changes; called on the driving thread. */
    public interface Actions {
        /** Start publishing with this leader id. */
        void acquired(UUID leaderId);

        /** Stop publishing at once. */
        void fenced();

        /** Stop publishing and return only once in-flight work is drained. */
        void revoked();
    }

    private final UUID instanceId;
    private final Duration heartbeatTimeout;
    private final Duration heartbeatInterval;
    private final Clock clock;
    private final Actions actions;
    private final Supplier<UUID> ids;

    private Role role = Role.STANDBY;
    private boolean assigned;
    private UUID leaderId;
    private Instant lastHeartbeatSeen;
    private Instant lastHeartbeatSent;
    private long sequence;
    private long fencedAtSequence;

    public NeliStateMachine(UUID instanceId, Duration heartbeatTimeout, Duration heartbeatInterval, Clock clock,
                            Actions actions) {
        this(instanceId, heartbeatTimeout, heartbeatInterval, clock, actions, UUID::randomUUID);
    }

    NeliStateMachine(UUID instanceId, Duration heartbeatTimeout, Duration heartbeatInterval, Clock clock,
                     Actions actions, Supplier<UUID> ids) {
        this.instanceId = Objects.requireNonNull(instanceId, "instanceId");
        this.heartbeatTimeout = Objects.requireNonNull(heartbeatTimeout, "heartbeatTimeout");
        this.heartbeatInterval = Objects.requireNonNull(heartbeatInterval, "heartbeatInterval");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.actions = Objects.requireNonNull(actions, "actions");
        this.ids = ids;
    }

    public Role role() {
        return role;
    }

    /** The current leader id, or null unless {@link Role#LEADER}. */
    public UUID leaderId() {
        return leaderId;
    }

    public UUID instanceId() {
        return instanceId;
    }

    @Override
    public void assigned() {
        if (assigned) {
            return;
        }
        assigned = true;
        lastHeartbeatSeen = clock.instant();
        lastHeartbeatSent = null;
        becomeLeader();
    }

    @Override
    public void revoked() {
        if (!assigned) {
            return;
        }
        assigned = false;
        Role was = role;
        role = Role.STANDBY;
        leaderId = null;
        if (was == Role.LEADER) {
            actions.revoked();
        }
    }

    @Override
    public void lost() {
        if (!assigned) {
            return;
        }
        assigned = false;
        Role was = role;
        role = Role.STANDBY;
        leaderId = null;
        if (was == Role.LEADER) {
            actions.fenced();
        }
    }

    @Override
    public void heartbeat(Heartbeat heartbeat) {
        if (!assigned || !instanceId.equals(heartbeat.instanceId())) {
            return;
        }
        Instant now = clock.instant();
        if (role == Role.FENCED) {
            if (heartbeat.sequence() <= fencedAtSequence) {
                return; // sent before the fence: proves nothing about now
            }
            lastHeartbeatSeen = now;
            becomeLeader();
        } else {
            lastHeartbeatSeen = now;
        }
    }

    /**
     * Advances time: fences a leader whose heartbeats stopped, and returns the heartbeat to publish now, if one
     * is due (every heartbeat interval while assigned), or null.
     */
    public Heartbeat tick() {
        if (!assigned) {
            return null;
        }
        Instant now = clock.instant();
        if (role == Role.LEADER && Duration.between(lastHeartbeatSeen, now).compareTo(heartbeatTimeout) > 0) {
            role = Role.FENCED;
            leaderId = null;
            fencedAtSequence = sequence;
            actions.fenced();
        }
        if (lastHeartbeatSent == null || Duration.between(lastHeartbeatSent, now).compareTo(heartbeatInterval) >= 0) {
            lastHeartbeatSent = now;
            return new Heartbeat(instanceId, ++sequence);
        }
        return null;
    }

    private void becomeLeader() {
        role = Role.LEADER;
        leaderId = ids.get();
        actions.acquired(leaderId);
    }
}
