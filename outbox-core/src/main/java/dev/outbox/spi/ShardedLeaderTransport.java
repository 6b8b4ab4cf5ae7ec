package dev.outbox.spi;

import java.time.Duration;
import java.util.Set;

/**
 * The transport a sharded outbox's leader elections run over: one membership per dispatcher in one group, and one
 * channel per shard (Kafka: the leader topic has one partition per shard, and the group coordinator spreads the
 * partitions over the members). Each shard has its own NELI timeline, run by the core exactly as for an unsharded
 * outbox's {@link LeaderTransport}: this transport only says which shards this member was given or lost and
 * carries each shard's heartbeats.
 *
 * <h2>Threading</h2>
 * The dispatcher calls {@link #start} and {@link #poll} from one thread of its own (the shard poller), and
 * {@link #close} after stopping it. {@link #publish} is called from the shards' leader threads concurrently and
 * must be thread-safe. Every {@link Listener} callback is made on the polling thread, from inside {@link #poll};
 * {@link Listener#revoked} blocks until the revoked shards drained (at most the dispatcher's drain timeout), and
 * the transport must tolerate that.
 */
public interface ShardedLeaderTransport extends AutoCloseable {

    /**
     * The number of shards (Kafka: partitions of the leader topic); fixed for the transport's life.
     *
     * @return the shard count, at least 1; it must equal the store's
     */
    int shards();

    /**
     * Joins the group. Membership events are delivered later, from {@link #poll}.
     *
     * @param listener receives the membership events and heartbeats, on the polling thread; not null
     */
    void start(Listener listener);

    /**
     * Waits at most {@code timeout} for membership changes and heartbeats and delivers them to the listener. Must
     * also keep the membership alive.
     *
     * @param timeout the longest wait
     */
    void poll(Duration timeout);

    /**
     * Publishes a heartbeat on {@code shard}'s channel. Only called for a shard assigned to this member. May be
     * asynchronous; a heartbeat that is lost simply never arrives. Thread-safe.
     *
     * @param shard     the shard, from 0 to {@link #shards()} - 1
     * @param heartbeat the shard leader's heartbeat; not null
     */
    void publish(int shard, Heartbeat heartbeat);

    /**
     * Asks the group to confirm which shards this member still owns, as {@link LeaderTransport#reconfirm()} does for
     * one leader partition: the round starts from the next {@link #poll}, and its outcome arrives as
     * {@link Listener#confirmed(Set)} with the shards still owned (or as {@code lost} / {@code revoked}). Thread-safe:
     * a shard whose lease lapsed asks from its own leader thread. Returns false (the default) if the transport cannot
     * confirm; a shard then trusts its next poll.
     *
     * @return true if a confirmation round was asked for; false if the transport cannot confirm
     */
    default boolean reconfirm() {
        return false;
    }

    /** Leaves the group and releases resources. */
    @Override
    void close();

    /** Receives membership events and heartbeats, on the polling thread. */
    interface Listener {
        /**
         * This member now owns these shards' channels (in addition to those it owned).
         *
         * @param shards the newly assigned shards
         */
        void assigned(Set<Integer> shards);

        /**
         * This member is about to lose these shards in an orderly rebalance. Returns once their harvests stopped
         * publishing and drained their in-flight records, so that the next owners start clean.
         *
         * @param shards the shards being revoked
         */
        void revoked(Set<Integer> shards);

        /**
         * This member lost these shards without an orderly hand-over: they must stop publishing at once.
         *
         * @param shards the lost shards
         */
        void lost(Set<Integer> shards);

        /**
         * A heartbeat arrived on {@code shard}'s channel.
         *
         * @param shard     the shard whose channel it arrived on
         * @param heartbeat the heartbeat, from this or another member
         */
        void heartbeat(int shard, Heartbeat heartbeat);

        /**
         * The membership round asked for by {@link ShardedLeaderTransport#reconfirm()} completed; this member still
         * owns {@code shards}. Transports that never return true from {@code reconfirm()} never call it.
         *
         * @param shards the shards this member still owns
         */

        default void confirmed(Set<Integer> shards) {
        }
    }
}
