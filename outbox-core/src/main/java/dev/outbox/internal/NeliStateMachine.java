package dev.outbox.internal;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;

import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * NELI leader election as pure logic: fed membership events and heartbeats by a {@link LeaderTransport} and
 * time by a monotonic clock (nanoseconds, as {@link System#nanoTime()}), it decides when this instance leads and
 * tells its {@link Actions}. Every lease is measured on that monotonic clock, never on the wall clock: stepping the
 * system time forwards or backwards neither fences a leader nor stretches its lease.
 *
 * <ul>
 *   <li>Assigned the leader partition → leader with a fresh leader id.</li>
 *   <li>Leader and no own heartbeat seen for longer than the heartbeat timeout → fenced: stop publishing at
 *       once (the partition may be reassigned soon).</li>
 *   <li>Fenced, still assigned, and an own heartbeat arrives that was published after the fence <em>and</em>
 *       after the transport confirmed the assignment since the fence → leader again with a new id (an old id is
 *       never reused). Heartbeats published before that prove nothing: the group may have moved on without this
 *       instance hearing of it yet (a paused process resumes with a stale view of the group). On fencing, the
 *       machine asks the transport to {@linkplain Actions#reconfirm() reconfirm} the assignment with the group; a
 *       transport that can answers with {@link #confirmed()}, and one that cannot is trusted after its next
 *       completed poll.</li>
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

        /**
         * Ask the transport to confirm the assignment with the group ({@link LeaderTransport#reconfirm()}); true if
         * it will answer with {@link NeliStateMachine#confirmed()}. The default cannot.
         */
        default boolean reconfirm() {
            return false;
        }
    }

    private final UUID instanceId;
    private final Duration heartbeatTimeout;
    private final Duration heartbeatInterval;
    private final LongSupplier nanos;
    private final Actions actions;
    private final Supplier<UUID> ids;

    /**
     * When leadership lapses unless a heartbeat arrives, on the monotonic clock; null without a lease. One volatile
     * reference, so that other threads read the lease whole. */
    private volatile Long leaseExpiryNanos;
    private Role role = Role.STANDBY;
    private boolean assigned;
    private UUID leaderId;
    private long lastHeartbeatSeen;
    private boolean heartbeatSent;
    private long lastHeartbeatSent;
    private long sequence;
    /** While fenced: the lowest heartbeat sequence that may restore leadership (see {@link #polled()}). */
    private long restoreFromSequence = Long.MAX_VALUE;
    /** While fenced: the transport was asked to reconfirm the assignment and has not answered yet. */
    private boolean confirming;

    /**
     * @param nanos a monotonic clock in nanoseconds: {@code System::nanoTime} in production, a hand-moved one in
     *              tests. Only differences between its values are used.
     */
    public NeliStateMachine(UUID instanceId, Duration heartbeatTimeout, Duration heartbeatInterval, LongSupplier nanos,
                            Actions actions) {
        this(instanceId, heartbeatTimeout, heartbeatInterval, nanos, actions, UUID::randomUUID);
    }

    NeliStateMachine(UUID instanceId, Duration heartbeatTimeout, Duration heartbeatInterval, LongSupplier nanos,
                     Actions actions, Supplier<UUID> ids) {
        this.instanceId = Objects.requireNonNull(instanceId, "instanceId");
        this.heartbeatTimeout = Objects.requireNonNull(heartbeatTimeout, "heartbeatTimeout");
        this.heartbeatInterval = Objects.requireNonNull(heartbeatInterval, "heartbeatInterval");
        this.nanos = Objects.requireNonNull(nanos, "nanos");
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
     * Whether this instance may publish at {@code nowNanos} (on the same monotonic clock): it leads, and its last
     * own heartbeat was seen no longer than the heartbeat timeout before. Safe to call from any thread: a publisher
     * checks it before every send, so that a stalled driving thread (which would fence late) cannot let it publish
     * past the lease.
     */
    public boolean leaseValid(long nowNanos) {
        Long expiry = leaseExpiryNanos;
        return expiry != null && nowNanos - expiry <= 0;
    }

    /** Nanoseconds of lease left at {@code nowNanos}, negative once lapsed, {@link Long#MIN_VALUE} without one. */
    public long leaseLeftNanos(long nowNanos) {
        Long expiry = leaseExpiryNanos;
        return expiry != null ? expiry - nowNanos : Long.MIN_VALUE;
    }

    private void seen(long at) {
        lastHeartbeatSeen = at;
        leaseExpiryNanos = role == Role.LEADER ? at + heartbeatTimeout.toNanos() : null;
    }

    @Override
    public void assigned() {
        if (assigned) {
            return;
        }
        assigned = true;
        heartbeatSent = false;
        becomeLeader(nanos.getAsLong());
    }

    @Override
    public void revoked() {
        if (!assigned) {
            return;
        }
        assigned = false;
        confirming = false;
        Role was = role;
        role = Role.STANDBY;
        leaderId = null;
        leaseExpiryNanos = null;
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
        confirming = false;
        Role was = role;
        role = Role.STANDBY;
        leaderId = null;
        leaseExpiryNanos = null;
        if (was == Role.LEADER) {
            actions.fenced();
        }
    }

    @Override
    public void heartbeat(Heartbeat heartbeat) {
        if (!assigned || !instanceId.equals(heartbeat.instanceId())) {
            return;
        }
        long now = nanos.getAsLong();
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
        long now = nanos.getAsLong();
        fenceIfLapsed(now);
        if (!heartbeatSent || now - lastHeartbeatSent >= heartbeatInterval.toNanos()) {
            heartbeatSent = true;
            lastHeartbeatSent = now;
            return new Heartbeat(instanceId, ++sequence);
        }
        return null;
    }

    /**
     * Tells the machine that a transport poll completed: membership events it carried have been delivered.
     * Heartbeats published from now on may restore a fenced leader, unless the transport was asked to reconfirm
     * the assignment and has not answered yet ({@link #confirmed()}).
     */
    public void polled() {
        if (role == Role.FENCED && !confirming && restoreFromSequence == Long.MAX_VALUE) {
            restoreFromSequence = sequence + 1;
        }
    }

    /**
     * The transport confirmed, after this machine asked it to ({@link Actions#reconfirm()}), that this instance still
     * owns the leader partition: heartbeats published from now on may restore a fenced leader. Ignored otherwise.
     */
    @Override
    public void confirmed() {
        if (assigned && role == Role.FENCED && confirming) {
            confirming = false;
            restoreFromSequence = sequence + 1;
        }
    }

    private void fenceIfLapsed(long now) {
        if (role == Role.LEADER && now - lastHeartbeatSeen > heartbeatTimeout.toNanos()) {
            role = Role.FENCED;
            leaderId = null;
            leaseExpiryNanos = null;
            restoreFromSequence = Long.MAX_VALUE;
            actions.fenced();
            confirming = actions.reconfirm();
        }
    }

    private void becomeLeader(long now) {
        role = Role.LEADER;
        leaderId = ids.get();
        seen(now);
        actions.acquired(leaderId);
    }
}
