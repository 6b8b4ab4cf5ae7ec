package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxException;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

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

    private static final Logger log = LoggerFactory.getLogger(KafkaLeaderTransport.class);
    private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration TOPIC_RECHECK = Duration.ofSeconds(5);

    private final String topic;
    private final String groupId;
    private final TopicPartition leaderPartition;
    private final boolean createTopic;
    private final Optional<Short> replicationFactor;
    private final Duration closeTimeout;
    private final Duration sessionTimeout;
    private final Duration maxPollInterval;
    private final Duration heartbeatInterval;
    private final Map<String, Object> consumerConfig;
    private final Map<String, Object> producerConfig;
    private final Map<String, Object> adminConfig;

    private Consumer<byte[], byte[]> consumer;
    private Producer<byte[], byte[]> producer;
    private Listener listener;
    private volatile boolean owner;
    private boolean inPoll;
    private boolean closed;
    private boolean topicConfirmed;
    private long nextTopicCheck = System.nanoTime();
    private RuntimeException callbackFailure;

    private KafkaLeaderTransport(Builder b, Map<String, Object> consumerConfig,
                                 Map<String, Object> producerConfig, Map<String, Object> adminConfig,
                                 Duration sessionTimeout, Duration maxPollInterval, Duration heartbeatInterval) {
        this.topic = b.topic;
        this.groupId = b.groupId;
        this.leaderPartition = new TopicPartition(b.topic, 0);
        this.createTopic = b.createTopic;
        this.replicationFactor = b.replicationFactor;
        this.closeTimeout = b.closeTimeout;
        this.consumerConfig = consumerConfig;
        this.producerConfig = producerConfig;
        this.adminConfig = adminConfig;
        this.sessionTimeout = sessionTimeout;
        this.maxPollInterval = maxPollInterval;
        this.heartbeatInterval = heartbeatInterval;
    }

    /** Starts a builder; not thread-safe. */
    public static Builder builder() {
        return new Builder();
    }

    public String topic() {
        return topic;
    }

    public String groupId() {
        return groupId;
    }

    /** The effective {@code session.timeout.ms}: a crashed leader is replaced after about this long. */
    public Duration sessionTimeout() {
        return sessionTimeout;
    }

    /** The effective {@code max.poll.interval.ms}. */
    public Duration maxPollInterval() {
        return maxPollInterval;
    }

    /** The effective {@code heartbeat.interval.ms} (Kafka's group heartbeat, not NELI's). */
    public Duration heartbeatInterval() {
        return heartbeatInterval;
    }

    /** Whether this instance currently owns the leader partition; safe to read from any thread. */
    public boolean isAssigned() {
        return owner;
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
        if (this.listener != null) {
            throw new IllegalStateException("Kafka leader transport for topic '" + topic + "' already started");
        }
        if (closed) {
            throw new IllegalStateException("Kafka leader transport for topic '" + topic + "' is closed");
        }
        this.listener = listener;
        checkTopicIfDue();
        try {
            producer = new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer());
            consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        } catch (KafkaException e) {
            closeClients();
            throw new OutboxException("Kafka rejected the leader transport's configuration: " + e.getMessage(), e);
        }
        consumer.subscribe(List.of(topic), new RebalanceListener());
        log.info("joined leader group '{}' on topic '{}' (session timeout {} ms, max poll interval {} ms)", groupId,
                topic, sessionTimeout.toMillis(), maxPollInterval.toMillis());
    }

    /**
     * Checks the leader topic now if it was not confirmed yet and a check is due. A Kafka that cannot be
     * reached is not an error here: the consumer keeps trying to join, and the check is repeated every
     * {@link #TOPIC_RECHECK} until it succeeds.
     *
     * @throws OutboxException if the topic is missing and must not be created, or cannot be created
     */
    private void checkTopicIfDue() {
        if (topicConfirmed || System.nanoTime() - nextTopicCheck < 0) {
            return;
        }
        try {
            ensureTopic();
            topicConfirmed = true;
        } catch (TopicCheckUnavailable e) {
            nextTopicCheck = System.nanoTime() + TOPIC_RECHECK.toNanos();
            log.warn("could not check the leader topic '{}' ({}); will try again in {} s", topic, e.getMessage(),
                    TOPIC_RECHECK.toSeconds());
        }
    }

    private void ensureTopic() {
        try (Admin admin = Admin.create(adminConfig)) {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic),
                                new DescribeTopicsOptions().timeoutMs((int) ADMIN_TIMEOUT.toMillis()))
                        .allTopicNames().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(topic);
                if (d != null && d.partitions().size() > 1) {
                    log.info("leader topic '{}' has {} partitions; only partition 0 is used", topic,
                            d.partitions().size());
                }
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw failedCheck("could not check the leader topic '" + topic + "'", e.getCause());
                }
            }
            if (!createTopic) {
                throw new OutboxException("leader topic '" + topic + "' does not exist; create it (one partition is"
                        + " enough) or allow the transport to create it");
            }
            NewTopic t = new NewTopic(topic, Optional.of(1), replicationFactor)
                    .configs(Map.of("cleanup.policy", "delete", "retention.ms", "3600000", "segment.ms", "3600000"));
            try {
                admin.createTopics(List.of(t), new CreateTopicsOptions().timeoutMs((int) ADMIN_TIMEOUT.toMillis()))
                        .all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                log.info("created leader topic '{}'", topic);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw failedCheck("leader topic '" + topic + "' does not exist and could not be created",
                            e.getCause());
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TopicCheckUnavailable("interrupted", e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TopicCheckUnavailable("Kafka did not answer within " + ADMIN_TIMEOUT, e);
        } catch (KafkaException e) {
            throw new OutboxException("could not check the leader topic '" + topic + "': " + e.getMessage(), e);
        }
    }

    /** Retriable causes (Kafka unreachable, timeouts) may pass; anything else (not authorized, ...) will not. */
    private static RuntimeException failedCheck(String what, Throwable cause) {
        if (cause instanceof RetriableException) {
            return new TopicCheckUnavailable(what + ": " + cause, cause);
        }
        return new OutboxException(what + ": " + cause, cause);
    }

    /** The leader topic could not be checked for a reason that may pass. */
    private static final class TopicCheckUnavailable extends OutboxException {
        private static final long serialVersionUID = 1L;

        TopicCheckUnavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    @Override
    public void poll(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (consumer == null) {
            throw new IllegalStateException("Kafka leader transport for topic '" + topic + "' not started");
        }
        checkTopicIfDue();
        ConsumerRecords<byte[], byte[]> records;
        callbackFailure = null;
        inPoll = true;
        try {
            records = consumer.poll(timeout);
        } catch (InterruptException e) {
            // Kafka has restored the thread's interrupt flag; the dispatcher sees it and stops.
            return;
        } catch (KafkaException e) {
            RuntimeException fromListener = callbackFailure;
            callbackFailure = null;
            if (fromListener != null) {
                throw fromListener;
            }
            throw new OutboxException("polling the leader group '" + groupId + "' failed: " + e.getMessage(), e);
        } finally {
            inPoll = false;
        }
        for (ConsumerRecord<byte[], byte[]> r : records.records(leaderPartition)) {
            Heartbeat hb = HeartbeatCodec.decode(r.value());
            if (hb == null) {
                log.debug("ignoring a record on leader topic '{}' at offset {} that is not a heartbeat", topic,
                        r.offset());
                continue;
            }
            listener.heartbeat(hb);
        }
    }

    @Override
    public void publish(Heartbeat heartbeat) {
        Objects.requireNonNull(heartbeat, "heartbeat");
        if (producer == null || closed) {
            return;
        }
        try {
            producer.send(new ProducerRecord<>(topic, 0, null, HeartbeatCodec.encode(heartbeat)), (md, e) -> {
                if (e != null) {
                    log.debug("heartbeat {} to '{}' failed: {}", heartbeat.sequence(), topic, e.toString());
                }
            });
        } catch (InterruptException e) {
            // interrupt flag restored by Kafka; the heartbeat is simply lost
        } catch (KafkaException e) {
            log.debug("heartbeat {} to '{}' not sent: {}", heartbeat.sequence(), topic, e.toString());
        }
    }

    /** Leaves the group (at most the close timeout) and closes the clients. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeClients();
        owner = false;
        log.info("left leader group '{}'", groupId);
    }

    /**
     * Drops out the way a crashed process does: the consumer closes without leaving the group, so the group
     * notices only when the session expires. For tests that measure take-over after a crash.
     */
    void abandon() {
        if (closed) {
            return;
        }
        closed = true;
        owner = false;
        if (consumer != null) {
            consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
                    .withTimeout(Duration.ZERO));
        }
        if (producer != null) {
            producer.close(Duration.ZERO);
        }
    }

    private void closeClients() {
        if (consumer != null) {
            try {
                consumer.close(CloseOptions.timeout(closeTimeout));
            } catch (RuntimeException e) {
                log.warn("closing the leader group consumer failed", e);
            }
        }
        if (producer != null) {
            try {
                producer.close(closeTimeout);
            } catch (RuntimeException e) {
                log.warn("closing the heartbeat producer failed", e);
            }
        }
    }

    @Override
    public String toString() {
        return "KafkaLeaderTransport{topic=" + topic + ", group=" + groupId + ", assigned=" + owner + '}';
    }

    /** Turns Kafka's rebalance callbacks about partition 0 into listener events. */
    private final class RebalanceListener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            if (!partitions.contains(leaderPartition) || owner) {
                return;
            }
            owner = true;
            consumer.seekToEnd(List.of(leaderPartition));
            log.info("assigned leader partition {} of group '{}'", leaderPartition, groupId);
            deliver(() -> listener.assigned());
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.contains(leaderPartition) || !owner) {
                return;
            }
            owner = false;
            log.info("leader partition {} of group '{}' revoked", leaderPartition, groupId);
            deliver(() -> listener.revoked());
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            if (!partitions.contains(leaderPartition) || !owner) {
                return;
            }
            owner = false;
            log.warn("leader partition {} of group '{}' lost", leaderPartition, groupId);
            deliver(() -> listener.lost());
        }

        private void deliver(Runnable event) {
            if (!inPoll) {
                return; // while closing: the dispatcher has stopped publishing already
            }
            try {
                event.run();
            } catch (RuntimeException e) {
                callbackFailure = e;
                throw e;
            }
        }
    }

    /**
     * Builds a {@link KafkaLeaderTransport}; validates names and the timing relations on {@link #build()}. Not
     * thread-safe.
     */
    public static final class Builder {
        private final KafkaSettings common = new KafkaSettings();
        private final KafkaSettings consumerOnly = new KafkaSettings();
        private final KafkaSettings producerOnly = new KafkaSettings();
        private String topic;
        private String groupId;
        private Duration heartbeatTimeout = DEFAULT_HEARTBEAT_TIMEOUT;
        private Duration drainTimeout = DispatcherConfig.defaults().drainTimeout();
        private Duration deliveryTimeout = KafkaMessageBroker.DEFAULT_DELIVERY_TIMEOUT;
        private boolean createTopic = true;
        private Optional<Short> replicationFactor = Optional.empty();
        private Duration closeTimeout = Duration.ofSeconds(5);

        private Builder() {
        }

        /** Client properties for the consumer, the heartbeat producer and the admin client (TLS, SASL, ...). */
        public Builder properties(Map<?, ?> properties) {
            common.putAll(properties);
            return this;
        }

        /** Shorthand for {@code bootstrap.servers}. */
        public Builder bootstrapServers(String servers) {
            if (servers == null || servers.isBlank()) {
                throw new IllegalArgumentException("bootstrapServers must not be blank: '" + servers + "'");
            }
            common.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
            return this;
        }

        /** A property for the leader group consumer only (for example {@code session.timeout.ms}). */
        public Builder consumerProperty(String name, Object value) {
            consumerOnly.put(name, value);
            return this;
        }

        /** A property for the heartbeat producer only. */
        public Builder producerProperty(String name, Object value) {
            producerOnly.put(name, value);
            return this;
        }

        /** The leader topic, one per outbox; required. Partition 0 decides leadership. */
        public Builder topic(String topic) {
            String problem = KafkaSettings.topicProblem(topic);
            if (problem != null) {
                throw new IllegalArgumentException("leader " + problem);
            }
            if (topic.startsWith("__")) {
                throw new IllegalArgumentException("leader topic '" + topic + "' must not start with '__' (Kafka's"
                        + " internal topics)");
            }
            this.topic = topic;
            return this;
        }

        /** The leader group, one per outbox; defaults to the topic name. */
        public Builder groupId(String groupId) {
            if (groupId == null || groupId.isBlank()) {
                throw new IllegalArgumentException("leader groupId must not be blank: '" + groupId + "'");
            }
            for (int i = 0; i < groupId.length(); i++) {
                char c = groupId.charAt(i);
                if (Character.isWhitespace(c) || Character.isISOControl(c)) {
                    throw new IllegalArgumentException("leader groupId '" + groupId + "' contains whitespace or a"
                            + " control character at index " + i);
                }
            }
            if (groupId.length() > 255) {
                throw new IllegalArgumentException("leader groupId is " + groupId.length()
                        + " characters, more than 255: '" + groupId.substring(0, 40) + "…'");
            }
            this.groupId = groupId;
            return this;
        }

        /** The dispatcher's heartbeat timeout; must equal its {@link DispatcherConfig#heartbeatTimeout()}. */
        public Builder heartbeatTimeout(Duration timeout) {
            KafkaSettings.millis("heartbeatTimeout", timeout);
            this.heartbeatTimeout = timeout;
            return this;
        }

        /** Takes the heartbeat timeout and the drain timeout from the dispatcher's configuration. */
        public Builder dispatcherConfig(DispatcherConfig config) {
            Objects.requireNonNull(config, "config");
            this.heartbeatTimeout = config.heartbeatTimeout();
            this.drainTimeout = config.drainTimeout();
            return this;
        }

        /**
         * The {@code delivery.timeout.ms} of the producer publishing the outbox; default
         * {@link KafkaMessageBroker#DEFAULT_DELIVERY_TIMEOUT}.
         */
        public Builder deliveryTimeout(Duration timeout) {
            KafkaSettings.millis("deliveryTimeout", timeout);
            this.deliveryTimeout = timeout;
            return this;
        }

        /** Takes the delivery timeout from the broker publishing the outbox. */
        public Builder deliveryTimeoutOf(KafkaMessageBroker broker) {
            return deliveryTimeout(Objects.requireNonNull(broker, "broker").deliveryTimeout());
        }

        /** Whether {@link #start} creates a missing leader topic; true by default. */
        public Builder createTopic(boolean create) {
            this.createTopic = create;
            return this;
        }

        /**
         * The replication factor of a leader topic the transport creates; the cluster's
         * {@code default.replication.factor} if not set. With one replica, losing its broker leaves the group
         * without a leader until the broker returns.
         */
        public Builder topicReplicationFactor(int replicas) {
            if (replicas < 1 || replicas > Short.MAX_VALUE) {
                throw new IllegalArgumentException("topicReplicationFactor must be between 1 and " + Short.MAX_VALUE
                        + ", was " + replicas);
            }
            this.replicationFactor = Optional.of((short) replicas);
            return this;
        }

        /** How long {@link #close} waits to leave the group and close the clients; 5 s by default. */
        public Builder closeTimeout(Duration timeout) {
            KafkaSettings.millis("closeTimeout", timeout);
            this.closeTimeout = timeout;
            return this;
        }

        /**
         * @throws IllegalArgumentException if the topic is missing, a property contradicts an enforced setting,
         *                                  or the timings break a relation in the class documentation (the
         *                                  message names the setting, its value and the bound)
         */
        public KafkaLeaderTransport build() {
            if (topic == null) {
                throw new IllegalArgumentException("leader topic must be set");
            }
            if (groupId == null) {
                groupId = topic;
            }
            KafkaSettings c = new KafkaSettings(common);
            c.putAll(consumerOnly.toMap());
            if (c.string(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG) == null) {
                throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG
                        + "' must be set");
            }
            String g = c.string(ConsumerConfig.GROUP_ID_CONFIG);
            if (g != null && !g.equals(groupId)) {
                throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.GROUP_ID_CONFIG + "' ('" + g
                        + "') contradicts the leader groupId '" + groupId + "'; set only groupId");
            }
            c.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
            c.require(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false", "the leader group keeps no offsets");
            c.require(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest",
                    "only heartbeats sent after the assignment prove anything");
            c.require(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic", "NELI's timing relations need the"
                    + " client-side session timeout of the classic group protocol");
            c.forbid(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "a static member keeps the leader partition through"
                    + " a restart and delays take-over until its session expires");
            c.forbid(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, "heartbeats are read as bytes");
            c.forbid(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, "heartbeats are read as bytes");
            c.putIfAbsent(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                    CooperativeStickyAssignor.class.getName());

            long hb = heartbeatTimeout.toMillis();
            long d = deliveryTimeout.toMillis();
            long interval = c.longValue(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, Math.max(1, Math.min(1000, hb / 3)));
            if (interval < 1) {
                throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG
                        + "' must be positive, was " + interval);
            }
            long minSession = hb + d + interval;
            long session = c.longValue(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Math.max(3 * hb, minSession));
            if (session < minSession) {
                throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG
                        + "' must be at least heartbeatTimeout (" + hb + " ms) + the outbox producer's"
                        + " delivery.timeout.ms (" + d + " ms) + heartbeat.interval.ms (" + interval + " ms) = "
                        + minSession + " ms, was " + session + ": another instance must not be given leadership"
                        + " before a cut-off leader has fenced itself and its last sends have settled");
            }
            long minPoll = Math.max(minSession, drainTimeout.toMillis() + interval);
            long maxPoll = c.longValue(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, Math.max(session, minPoll));
            if (maxPoll < minPoll) {
                throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG
                        + "' must be at least " + minPoll + " ms (the larger of heartbeatTimeout + delivery.timeout.ms"
                        + " + heartbeat.interval.ms = " + minSession + " ms and drainTimeout + heartbeat.interval.ms = "
                        + (drainTimeout.toMillis() + interval) + " ms), was " + maxPoll);
            }
            c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, (int) interval);
            c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, (int) session);
            c.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, (int) maxPoll);

            KafkaSettings p = new KafkaSettings(common);
            p.putAll(producerOnly.toMap());
            p.forbid(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "heartbeats are not transactional");
            p.forbid(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "heartbeats are written as bytes");
            p.forbid(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "heartbeats are written as bytes");
            // A heartbeat is worth nothing late: one attempt, bounded by the heartbeat timeout.
            long requestTimeout = Math.max(1, hb / 2);
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
            p.put(ProducerConfig.ACKS_CONFIG, "1");
            p.put(ProducerConfig.RETRIES_CONFIG, 0);
            p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
            p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) requestTimeout);
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.max(hb, requestTimeout));
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Math.min(1000, Math.max(1, hb / 2)));

            Map<String, Object> admin = common.only(AdminClientConfig.configNames());
            admin.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) ADMIN_TIMEOUT.toMillis());
            admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) ADMIN_TIMEOUT.toMillis());
            admin.remove(AdminClientConfig.CLIENT_ID_CONFIG);

            return new KafkaLeaderTransport(this, c.toMap(), p.toMap(), admin, Duration.ofMillis(session),
                    Duration.ofMillis(maxPoll), Duration.ofMillis(interval));
        }
    }
}
