package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxException;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.ShardedLeaderTransport;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;

/**
 * NELI leader election over a Kafka consumer group: every dispatcher of one outbox subscribes to the same
 * leader topic in the same leader group; whoever Kafka assigns partition 0 may lead. The owner publishes
 * {@link Heartbeat}s to partition 0 and consumes them back; the core's state machine fences a leader whose own
 * heartbeats stop arriving.
 *
 * <pre>{@code
 * KafkaLeaderTransport transport = KafkaLeaderTransport.builder()
 *         .properties(myKafkaProperties)          // bootstrap.servers, TLS, SASL: shared with the broker
 *         .topic("billing-outbox-leader")        // one topic and group per outbox
 *         .groupId("billing-outbox-leader")
 *         .dispatcherConfig(config)               // heartbeat timeout and drain timeout of the dispatcher
 *         .deliveryTimeoutOf(broker)              // delivery.timeout.ms of the outbox's producer
 *         .build();
 * }</pre>
 *
 * <h2>Membership events</h2>
 * Partition 0 assigned → {@link Listener#assigned()}, after a seek to the end of the partition so that older
 * heartbeats are never taken for fresh ones; revoked in an orderly rebalance → {@link Listener#revoked()},
 * which may block while the dispatcher drains (the group waits up to {@code max.poll.interval.ms}); lost
 * (session expired, poll interval exceeded, fenced by the coordinator) → {@link Listener#lost()}. Other
 * partitions of the topic are ignored. Heartbeats of every instance found on partition 0 are passed on; the
 * state machine keeps its own.
 *
 * <h2>Enforced consumer settings</h2>
 * {@code group.id} is the leader group; {@code enable.auto.commit=false} and {@code auto.offset.reset=latest}
 * (no offsets are used); {@code group.protocol=classic} (the only protocol whose session timeout the client
 * sets); no {@code group.instance.id} (static members keep their partition through a restart and stall
 * take-over until the session expires). Timings, where <i>hb</i> is the dispatcher's heartbeat timeout,
 * <i>d</i> the outbox producer's {@code delivery.timeout.ms} and <i>i</i> {@code heartbeat.interval.ms}
 * (default min(1 s, hb/3)):
 * <ul>
 *   <li>{@code session.timeout.ms} ≥ hb + d + i (default max(3 × hb, hb + d + i); 15 s with the defaults).
 *       A leader cut off from Kafka at time T fences itself by T + hb, and its last sends have settled by
 *       T + hb + d; the coordinator cannot expire its session before T − i + {@code session.timeout.ms}, so
 *       the next leader starts only after the old one's records can no longer land.</li>
 *   <li>{@code max.poll.interval.ms} ≥ max(hb + d + i, drainTimeout + i) (default the larger of that and the
 *       session timeout): the same bound for a leader whose polling stalls, and room for a revocation to
 *       drain.</li>
 * </ul>
 * The default partition assignor is the cooperative sticky one, so a standby joining the group does not move
 * leadership.
 *
 * <h2>Leader topic</h2>
 * If missing, {@link #start} creates it with one partition, the cluster's default replication factor (or
 * {@link Builder#topicReplicationFactor(int)}) and one-hour segments and retention (heartbeats are worthless
 * after a few seconds); {@link Builder#createTopic(boolean) createTopic(false)} makes a missing topic an error
 * instead.
 *
 * <p>Not thread-safe, as the {@link LeaderTransport} port allows: {@link #start}, {@link #poll},
 * {@link #publish} and {@link #close} are called from the dispatcher's leader thread, and every listener
 * callback runs on that thread from inside {@link #poll}. Callbacks Kafka makes while closing (the final
 * revocation) are not passed on: the dispatcher has stopped by then.
 */
public final class KafkaLeaderTransport implements LeaderTransport {
    /** Default heartbeat timeout: {@link DispatcherConfig}'s default, 5 s. */
    public static final Duration DEFAULT_HEARTBEAT_TIMEOUT = DispatcherConfig.defaults().heartbeatTimeout();

    private static final int LEADER_PARTITION = 0;

    private final LeaderGroup group;
    private Listener listener;

    private KafkaLeaderTransport(LeaderGroup.Settings settings) {
        this.group = new LeaderGroup(settings, 1, false, "leader");
    }

    /**
     * Starts a builder; not thread-safe.
     *
     * @return a new builder with the defaults and no property, topic or group set
     */
    public static Builder builder() {
        return new Builder();
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
     * The effective {@code session.timeout.ms}: a crashed leader is replaced after about this long.
     *
     * @return the value set, or else the one derived from the timings (see the class documentation), in
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
     * Whether this instance currently owns the leader partition; safe to read from any thread.
     *
     * @return {@code true} from the assignment of partition 0 until its revocation or loss; owning it is what
     *         allows this instance to lead, not proof that it leads (the dispatcher decides that)
     */
    public boolean isAssigned() {
        return group.owned().contains(LEADER_PARTITION);
    }

    /**
     * Ensures the leader topic exists, then creates the consumer and producer and subscribes. If Kafka cannot
     * be reached, the topic check is repeated from {@link #poll} every 5 s, while the consumer keeps trying to
     * join: a dispatcher may start before Kafka does.
     *
     * @throws OutboxException if the leader topic is missing and must not be created, or cannot be created
     *                         for a reason that will not pass (not authorized, for example)
     * @throws IllegalStateException if already started
     */
    @Override
    public void start(Listener listener) {
        Objects.requireNonNull(listener, "listener");
        group.start(new PartitionZero());
        this.listener = listener;
    }

    @Override
    public void poll(Duration timeout) {
        group.poll(timeout);
    }

    /**
     * Rejoins the group on the next {@link #poll} to confirm that this instance still owns the leader partition
     * (see {@link LeaderTransport#reconfirm()}); with the cooperative sticky assignor the partition stays where it
     * is unless the group already gave it to another member while this one was not polling.
     */
    @Override
    public boolean reconfirm() {
        return group.reconfirm();
    }

    @Override
    public void publish(Heartbeat heartbeat) {
        group.publish(LEADER_PARTITION, heartbeat);
    }

    /** Leaves the group (at most the close timeout) and closes the clients. Idempotent. */
    @Override
    public void close() {
        group.close();
    }

    /**
     * Drops out the way a crashed process does: the consumer closes without leaving the group, so the group
     * notices only when the session expires. For tests that measure take-over after a crash.
     */
    void abandon() {
        group.abandon();
    }

    @Override
    public String toString() {
        return "KafkaLeaderTransport{topic=" + topic() + ", group=" + groupId() + ", assigned=" + isAssigned() + '}';
    }

    /** Passes on what concerns partition 0, the leader partition (the group uses no other). */
    private final class PartitionZero implements ShardedLeaderTransport.Listener {
        @Override
        public void assigned(Set<Integer> partitions) {
            if (partitions.contains(LEADER_PARTITION)) {
                listener.assigned();
            }
        }

        @Override
        public void revoked(Set<Integer> partitions) {
            if (partitions.contains(LEADER_PARTITION)) {
                listener.revoked();
            }
        }

        @Override
        public void lost(Set<Integer> partitions) {
            if (partitions.contains(LEADER_PARTITION)) {
                listener.lost();
            }
        }

        @Override
        public void heartbeat(int partition, Heartbeat heartbeat) {
            if (partition == LEADER_PARTITION) {
                listener.heartbeat(heartbeat);
            }
        }

        @Override
        public void confirmed(Set<Integer> partitions) {
            if (partitions.contains(LEADER_PARTITION)) {
                listener.confirmed();
            }
        }
    }

    /**
     * Builds a {@link KafkaLeaderTransport}; validates names and the timing relations on {@link #build()}. Not
     * thread-safe.
     */
    public static final class Builder extends LeaderGroupBuilder<Builder> {
        private Builder() {
        }

        /**
         * Validates the settings and derives the client configurations; creates no client (that is
         * {@link KafkaLeaderTransport#start}'s work), so nothing needs closing if the transport is never started.
         *
         * @return a new transport, not started
         * @throws IllegalArgumentException if the topic is missing, a property contradicts an enforced setting,
         *                                  or the timings break a relation in the class documentation (the
         *                                  message names the setting, its value and the bound)
         */
        public KafkaLeaderTransport build() {
            return new KafkaLeaderTransport(settings());
        }
    }
}
