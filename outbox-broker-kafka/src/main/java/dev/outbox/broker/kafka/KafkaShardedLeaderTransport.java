package dev.outbox.broker.kafka;

import dev.outbox.OutboxException;
import dev.outbox.OutboxShards;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;

/**
 * Shard leadership for a sharded outbox over one Kafka consumer group: the leader topic has one partition per
 * shard, every dispatcher of the outbox joins the leader group with one consumer, and Kafka's group coordinator
 * spreads the partitions — the shards — over the live members, moving them when one joins, leaves or dies.
 * Partition <i>i</i> is shard <i>i</i>'s NELI channel: its current owner publishes shard <i>i</i>'s heartbeats to
 * it and reads them back, and the core runs each shard's NELI timeline (leader ids, fencing, the barrier, the
 * drain on revocation) exactly as it runs an unsharded outbox's over {@link KafkaLeaderTransport}.
 *
 * <pre>{@code
 * KafkaShardedLeaderTransport transport = KafkaShardedLeaderTransport.builder()
 *         .properties(myKafkaProperties)          // bootstrap.servers, TLS, SASL: shared with the broker
 *         .topic("billing-outbox-leader")        // one topic and group per outbox
 *         .shards(6)                              // the store's shard count: one partition each
 *         .dispatcherConfig(config)
 *         .deliveryTimeoutOf(broker)
 *         .build();
 * Dispatcher dispatcher = Dispatcher.builder(store, broker).leaderTransport(transport).config(config).build();
 * }</pre>
 *
 * <h2>Membership events</h2>
 * Kafka's partition sets become shard sets: partitions assigned → {@link Listener#assigned}, after a seek to their
 * end so that older heartbeats are never taken for fresh ones; revoked in an orderly rebalance →
 * {@link Listener#revoked}, which blocks while the revoked shards drain (the group waits up to
 * {@code max.poll.interval.ms}); lost (session expired, poll interval exceeded, fenced by the coordinator) →
 * {@link Listener#lost}. A heartbeat read from partition <i>i</i> goes to {@link Listener#heartbeat} for shard
 * <i>i</i>.
 *
 * <h2>Rebalancing</h2>
 * The consumer uses the cooperative sticky assignor (unless the consumer properties name another): a rebalance
 * moves only the shards that must move to even out the members, and the others keep harvesting through it. A
 * moved shard is first revoked from its owner — which drains it before the rebalance can go on — and assigned to
 * its new owner only in the follow-up rebalance, so two members never own one shard at once. When a member dies
 * without leaving, its shards move once the coordinator expires its session; by then it has fenced itself (the
 * timing relations below).
 *
 * <h2>Settings</h2>
 * The same enforced consumer settings and timing relations as {@link KafkaLeaderTransport} (see its class
 * documentation), built by the same builder methods. {@code max.poll.interval.ms} ≥ drainTimeout +
 * {@code heartbeat.interval.ms} holds the revocation's barrier: the shards revoked together drain in parallel, so
 * one drain timeout bounds them all.
 *
 * <h2>Leader topic</h2>
 * If missing, {@link #start} creates it with one partition per shard, the cluster's default replication factor
 * (or {@link Builder#topicReplicationFactor(int)}) and one-hour segments and retention. An existing topic must have
 * exactly as many partitions as there are shards: {@link #start} refuses another count, naming both (the shard
 * count is the outbox table's; a topic left over from another count belongs to another configuration).
 *
 * <p>Thread-safety: {@link #start}, {@link #poll} and {@link #close} are called from one thread (the dispatcher's
 * shard poller), and every listener callback runs on it from inside {@link #poll}; {@link #publish},
 * {@link #assignedShards()} and the getters are safe from any thread, as the port requires.
 */
public final class KafkaShardedLeaderTransport implements ShardedLeaderTransport {
    private final LeaderGroup group;
    private final int shards;

    private KafkaShardedLeaderTransport(LeaderGroup.Settings settings, int shards) {
        this.group = new LeaderGroup(settings, shards, true, "shard leader");
        this.shards = shards;
    }

    /**
     * Starts a builder; not thread-safe.
     *
     * @return a new builder with the defaults and no property, topic or group set
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public int shards() {
        return shards;
    }

    /**
     * The leader topic.
     *
     * @return the topic's name, as set on the builder
     */
    public String topic() {
        return group.settings().topic();
    }

    /**
     * The leader group.
     *
     * @return the group's id: as set on the builder, else the topic's name
     */
    public String groupId() {
        return group.settings().groupId();
    }

    /**
     * The effective {@code session.timeout.ms}: a crashed member's shards move after about this long.
     *
     * @return the value set, or else the one derived from the timings (see {@link KafkaLeaderTransport}), in
     *         milliseconds
     */
    public Duration sessionTimeout() {
        return group.settings().sessionTimeout();
    }

    /**
     * The effective {@code max.poll.interval.ms}.
     *
     * @return the value set, or else the one derived from the timings (see {@link KafkaLeaderTransport}), in
     *         milliseconds
     */
    public Duration maxPollInterval() {
        return group.settings().maxPollInterval();
    }

    /**
     * The effective {@code heartbeat.interval.ms} (Kafka's group heartbeat, not NELI's).
     *
     * @return the value set, or else min(1 s, heartbeat timeout / 3), in milliseconds
     */
    public Duration heartbeatInterval() {
        return group.settings().heartbeatInterval();
    }

    /**
     * The shards whose partitions this member owns now; safe from any thread.
     *
     * @return an immutable snapshot of the shard indexes (0 to {@code shards() - 1}), empty before the first
     *         assignment and after the close
     */
    public Set<Integer> assignedShards() {
        return group.owned();
    }

    /**
     * Ensures the leader topic exists with one partition per shard, then creates the consumer and the heartbeat
     * producer and subscribes. If Kafka cannot be reached, the topic check is repeated from {@link #poll} every
     * 5 s while the consumer keeps trying to join.
     *
     * @throws OutboxException if the leader topic has another number of partitions than there are shards (naming
     *                         both), is missing and must not be created, or cannot be created for a reason that
     *                         will not pass
     * @throws IllegalStateException if already started or closed
     */
    @Override
    public void start(Listener listener) {
        group.start(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Polls the group: delivers rebalances and the owned shards' heartbeats.
     *
     * @throws OutboxException if polling failed, or if the leader topic, checked late because Kafka was not
     *                         reachable at {@link #start}, has another number of partitions than there are shards
     */
    @Override
    public void poll(Duration timeout) {
        group.poll(timeout);
    }

    /**
     * Rejoins the group on the next {@link #poll} to confirm the shards this member still owns (see
     * {@link ShardedLeaderTransport#reconfirm()}); thread-safe.
     */
    @Override
    public boolean reconfirm() {
        return group.reconfirm();
    }

    /** Sends a heartbeat to the shard's partition, asynchronously. Thread-safe. */
    @Override
    public void publish(int shard, Heartbeat heartbeat) {
        group.publish(OutboxShards.checkIndex(shard, shards), heartbeat);
    }

    /** Leaves the group (at most the close timeout) and closes the clients. Idempotent. */
    @Override
    public void close() {
        group.close();
    }

    /**
     * Drops out the way a crashed process does: the consumer closes without leaving the group, so its shards move
     * only when its session expires. For tests.
     */
    void abandon() {
        group.abandon();
    }

    @Override
    public String toString() {
        return "KafkaShardedLeaderTransport{topic=" + topic() + ", group=" + groupId() + ", shards=" + shards
                + ", assigned=" + assignedShards() + '}';
    }

    /**
     * Builds a {@link KafkaShardedLeaderTransport}: the same settings as {@link KafkaLeaderTransport.Builder}, plus
     * the shard count; validates names and the timing relations on {@link #build()}. Not thread-safe.
     */
    public static final class Builder extends LeaderGroupBuilder<Builder> {
        private int shards;

        private Builder() {
        }

        /**
         * The number of shards, equal to the store's ({@code Store.shards()}): the leader topic has one partition
         * per shard. Required.
         *
         * @param shards the shard count, from 1 to {@link OutboxShards#MAX_SHARDS}; an existing leader topic must
         *               have exactly that many partitions
         * @return this builder
         * @throws IllegalArgumentException if not between 1 and {@link OutboxShards#MAX_SHARDS}
         */
        public Builder shards(int shards) {
            this.shards = OutboxShards.checkCount(shards);
            return this;
        }

        /**
         * Validates the settings and derives the client configurations; creates no client (that is
         * {@link KafkaShardedLeaderTransport#start}'s work), so nothing needs closing if the transport is never
         * started.
         *
         * @return a new transport, not started
         * @throws IllegalArgumentException if the shard count or the topic is missing, a property contradicts an
         *                                  enforced setting, or the timings break a relation (the message names
         *                                  the setting, its value and the bound)
         */
        public KafkaShardedLeaderTransport build() {
            if (shards == 0) {
                throw new IllegalArgumentException("the shard count must be set (shards(n), the store's shard count)");
            }
            return new KafkaShardedLeaderTransport(settings(), shards);
        }
    }
}
