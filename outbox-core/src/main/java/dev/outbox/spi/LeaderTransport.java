package dev.outbox.spi;

import java.time.Duration;

/**
 * The transport that NELI leader election runs over: group membership ("this instance owns the leader
 * partition") and a channel on which the owner publishes and receives its own heartbeats. The election logic
 * itself — leader ids, fencing on missing heartbeats, revocation — lives in the core and is the same for every
 * transport.
 *
 * <h2>Threading</h2>
 * The dispatcher calls {@link #start}, {@link #poll} and {@link #publish} from one thread only (its leader
 * thread), and {@link #close} from that thread as well after stopping it. Every {@link Listener} callback is
 * made on that same thread, from inside {@link #poll}. A callback may block ({@link Listener#revoked()} blocks
 * until in-flight work drained); the transport must tolerate that for at least the dispatcher's drain timeout.
 */
public interface LeaderTransport extends AutoCloseable {

    /**
     * Joins the group. Membership events are delivered later, from {@link #poll}.
     *
     * @param listener receives the membership events and heartbeats, on the polling thread; not null
     */
    void start(Listener listener);

    /**
     * Waits at most {@code timeout} for membership changes and heartbeats and delivers them to the listener.
     * Must also keep the membership alive (Kafka: this is the consumer poll).
     *
     * @param timeout the longest wait; the dispatcher passes its {@code pollInterval}
     */
    void poll(Duration timeout);

    /**
     * Publishes a heartbeat to the members' channel. Only called while this instance is assigned. May be
     * asynchronous; a heartbeat that is lost simply never arrives.
     *
     * @param heartbeat the heartbeat; not null
     */
    void publish(Heartbeat heartbeat);

    /**
     * Asks the group to confirm that this instance still owns the leader partition. The election calls it when a
     * leader's lease lapsed (its own heartbeats stopped arriving: the process was paused, the network or the
     * channel stalled), because a transport that was not running may not have heard yet that the group moved on
     * without it, and the heartbeats it then hears of prove nothing. Called on the polling thread.
     *
     * <p>Returns true if the transport will answer, from a later {@link #poll}, with {@link Listener#confirmed()}
     * once a membership round that began after this call completed with this instance still owning the partition,
     * or with {@link Listener#lost()} or {@link Listener#revoked()} if it does not (Kafka: a rejoin,
     * {@code enforceRebalance}; the cooperative assignor keeps the partition where it is). The fenced leader then
     * leads again only after that confirmation. Returns false (the default) if it cannot: the election then trusts
     * the next completed poll, as a transport that does not know better must.
     *
     * @return true if a confirmation round was asked for (its outcome arrives from {@link #poll}); false if the
     *         transport cannot confirm
     */
    default boolean reconfirm() {
        return false;
    }

    /** Leaves the group and releases resources. */
    @Override
    void close();

    /** Receives membership events and heartbeats; called on the polling thread. */
    interface Listener {
        /** This instance now owns the leader partition. */
        void assigned();

        /**
         * This instance is about to lose the leader partition in an orderly rebalance. Returns once the
         * instance stopped publishing and drained its in-flight records, so that the next owner starts clean.
         */
        void revoked();

        /**
         * This instance lost the leader partition without an orderly hand-over (session expired): another
         * instance may already lead. Must stop publishing at once.
         */
        void lost();

        /**
         * A heartbeat arrived on the channel.
         *
         * @param heartbeat the heartbeat, from this or another instance
         */
        void heartbeat(Heartbeat heartbeat);


        /**
         * The membership round asked for by {@link LeaderTransport#reconfirm()} completed and this instance still
         * owns the leader partition. Transports that never return true from {@code reconfirm()} never call it.
         */
        default void confirmed() {
        }
    }
}
