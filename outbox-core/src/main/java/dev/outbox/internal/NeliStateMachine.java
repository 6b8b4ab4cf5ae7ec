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
 *   <li>Fenced, still assigned, and an own heartbeat arrives that was published after the fence <em>and</em>
 *       after a transport poll completed since the fence → leader again with a new id (an old id is never
 *       reused). Heartbeats published while the transport was not polled prove nothing: the group may have
 *       moved on without this instance hearing of it yet.</li>
 *   <li>A heartbeat arriving after the lease lapsed does not extend it: the lapse fences first.</li>
 *   <li>Revoked → the revocation waits while the actions drain in-flight work, then standby.</li>
 *   <li>Lost → fenced, then standby.</li>
 * </ul>
 *
 * <p>Not thread-safe: driven from one thread (the dispatcher's leader thread), which calls {@link #polled()}
 * after every transport poll and {@link #tick()} at least once per heartbeat interval.
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

    /** When leadership lapses unless a heartbeat arrives; read by other threads. */
    private volatile Instant leaseExpiry = Instant.MIN;
    private Role role = Role.STANDBY;
    private boolean assigned;
    private UUID leaderId;
    private Instant lastHeartbeatSeen;
    private Instant lastHeartbeatSent;
    private long sequence;
    /** While fenced: the lowest heartbeat sequence that may restore leadership (see {@link #polled()}). */
    private long restoreFromSequence = Long.MAX_VALUE;

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

    /**
     * The instant after which this instance must not publish unless a newer heartbeat arrives: the last own
     * heartbeat seen plus the heartbeat timeout while leading, {@link Instant#MIN} otherwise. Safe to read from
     * any thread: a publisher checks it before every send, so that a stalled driving thread (which would fence
     * late) cannot let it publish past the lease.
     */
    public Instant leaseExpiry() {
        return leaseExpiry;
    }

    private void seen(Instant at) {
        lastHeartbeatSeen = at;
        leaseExpiry = role == Role.LEADER ? at.plus(heartbeatTimeout) : Instant.MIN;
    }

    @Override
    public void assigned() {
        if (assigned) {
            return;
        }
        assigned = true;
        lastHeartbeatSent = null;
        becomeLeader(clock.instant());
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
        leaseExpiry = Instant.MIN;
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
        leaseExpiry = Instant.MIN;
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
        fenceIfLapsed(now);
        if (role == Role.FENCED) {
            if (heartbeat.sequence() < restoreFromSequence) {
                return; // published before the fence, or while the transport was not polled: proves nothing
            }
            becomeLeader(now);
        } else {
            seen(now);
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
        fenceIfLapsed(now);
        if (lastHeartbeatSent == null || Duration.between(lastHeartbeatSent, now).compareTo(heartbeatInterval) >= 0) {
            lastHeartbeatSent = now;
            return new Heartbeat(instanceId, ++sequence);
        }
        return null;
    }

    /**
     * Tells the machine that a transport poll completed: membership events it carried have been delivered.
     * Heartbeats published from now on may restore a fenced leader.
     */
    public void polled() {
        if (role == Role.FENCED && restoreFromSequence == Long.MAX_VALUE) {
            restoreFromSequence = sequence + 1;
        }
    }

    private void fenceIfLapsed(Instant now) {
        if (role == Role.LEADER && Duration.between(lastHeartbeatSeen, now).compareTo(heartbeatTimeout) > 0) {
            role = Role.FENCED;
            leaderId = null;
            leaseExpiry = Instant.MIN;
            restoreFromSequence = Long.MAX_VALUE;
            actions.fenced();
        }
    }

    private void becomeLeader(Instant now) {
        role = Role.LEADER;
        leaderId = ids.get();
        seen(now);
        actions.acquired(leaderId);
    }
}
