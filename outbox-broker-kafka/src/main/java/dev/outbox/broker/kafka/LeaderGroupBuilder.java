package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.producer.ProducerConfig;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What the builders of {@link KafkaLeaderTransport} and {@link KafkaShardedLeaderTransport} share: the client
 * properties, the leader topic and group, the timings NELI depends on, and their validation (the relations in
 * {@link KafkaLeaderTransport}'s class documentation). Not thread-safe.
 *
 * @param <B> the concrete builder, returned by every setter
 */
abstract class LeaderGroupBuilder<B extends LeaderGroupBuilder<B>> {
    private final KafkaSettings common = new KafkaSettings();
    private final KafkaSettings consumerOnly = new KafkaSettings();
    private final KafkaSettings producerOnly = new KafkaSettings();
    private String topic;
    private String groupId;
    private Duration heartbeatTimeout = KafkaLeaderTransport.DEFAULT_HEARTBEAT_TIMEOUT;
    private Duration drainTimeout = DispatcherConfig.defaults().drainTimeout();
    private Duration deliveryTimeout = KafkaMessageBroker.DEFAULT_DELIVERY_TIMEOUT;
    private boolean createTopic = true;
    private Optional<Short> replicationFactor = Optional.empty();
    private Duration closeTimeout = Duration.ofSeconds(5);

    LeaderGroupBuilder() {
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /**
     * Client properties for the consumer, the heartbeat producer and the admin client (TLS, SASL, ...); later
     * values win. The admin client gets only the properties it knows.
     *
     * @param properties Kafka client properties, copied at once; keys are converted with {@code toString()}. Not
     *                   {@code null}, and no value {@code null}. The enforced settings are checked by
     *                   {@code build()}.
     * @return this builder
     * @throws NullPointerException     if {@code properties} is {@code null}
     * @throws IllegalArgumentException if a name is blank or a value {@code null}
     */
    public B properties(Map<?, ?> properties) {
        common.putAll(properties);
        return self();
    }

    /**
     * Shorthand for {@code bootstrap.servers}, for all three clients.
     *
     * @param servers a comma-separated list of {@code host:port} pairs to reach the cluster; not blank
     * @return this builder
     * @throws IllegalArgumentException if {@code servers} is {@code null} or blank
     */
    public B bootstrapServers(String servers) {
        if (servers == null || servers.isBlank()) {
            throw new IllegalArgumentException("bootstrapServers must not be blank: '" + servers + "'");
        }
        common.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        return self();
    }

    /**
     * A property for the leader group consumer only (for example {@code session.timeout.ms}); it wins over the
     * same property given to {@link #properties}.
     *
     * @param name  the property's name, as in {@link ConsumerConfig}; not blank
     * @param value its value, a string or the type Kafka expects (milliseconds as a number for the timings); not
     *              {@code null}
     * @return this builder
     * @throws IllegalArgumentException if {@code name} is {@code null} or blank or {@code value} is {@code null}
     */
    public B consumerProperty(String name, Object value) {
        consumerOnly.put(name, value);
        return self();
    }

    /**
     * A property for the heartbeat producer only; it wins over the same property given to {@link #properties}.
     * The producer's timeouts, retries, acks and idempotence are set from the heartbeat timeout and cannot be
     * changed.
     *
     * @param name  the property's name, as in {@link ProducerConfig}; not blank
     * @param value its value, a string or the type Kafka expects; not {@code null}
     * @return this builder
     * @throws IllegalArgumentException if {@code name} is {@code null} or blank or {@code value} is {@code null}
     */
    public B producerProperty(String name, Object value) {
        producerOnly.put(name, value);
        return self();
    }

    /**
     * The leader topic, one per outbox; required.
     *
     * @param topic a valid Kafka topic name (1 to 249 characters of {@code [a-zA-Z0-9._-]}) that does not start
     *              with {@code __}
     * @return this builder
     * @throws IllegalArgumentException if {@code topic} is {@code null} or not such a name
     */
    public B topic(String topic) {
        String problem = KafkaSettings.topicProblem(topic);
        if (problem != null) {
            throw new IllegalArgumentException("leader " + problem);
        }
        if (topic.startsWith("__")) {
            throw new IllegalArgumentException("leader topic '" + topic + "' must not start with '__' (Kafka's"
                    + " internal topics)");
        }
        this.topic = topic;
        return self();
    }

    /**
     * The leader group, one per outbox; defaults to the topic name. It must not be the group of any other consumer.
     *
     * @param groupId the consumer group's id: 1 to 255 characters, no whitespace or control character
     * @return this builder
     * @throws IllegalArgumentException if {@code groupId} is {@code null}, blank or not such an id
     */
    public B groupId(String groupId) {
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
        return self();
    }

    /**
     * The dispatcher's heartbeat timeout; must equal its {@link DispatcherConfig#heartbeatTimeout()}. Default
     * {@link KafkaLeaderTransport#DEFAULT_HEARTBEAT_TIMEOUT}. The session timeout and the poll interval are derived
     * from it (see {@link KafkaLeaderTransport}).
     *
     * @param timeout the heartbeat timeout, positive (millisecond precision)
     * @return this builder
     * @throws NullPointerException     if {@code timeout} is {@code null}
     * @throws IllegalArgumentException if {@code timeout} is zero or negative
     */
    public B heartbeatTimeout(Duration timeout) {
        KafkaSettings.millis("heartbeatTimeout", timeout);
        this.heartbeatTimeout = timeout;
        return self();
    }

    /**
     * Takes the heartbeat timeout and the drain timeout from the dispatcher's configuration: the safe way to keep
     * them equal to the dispatcher's.
     *
     * @param config the configuration the dispatcher runs with; not {@code null}. Only its two timeouts are read,
     *               now.
     * @return this builder
     * @throws NullPointerException if {@code config} is {@code null}
     */
    public B dispatcherConfig(DispatcherConfig config) {
        Objects.requireNonNull(config, "config");
        this.heartbeatTimeout = config.heartbeatTimeout();
        this.drainTimeout = config.drainTimeout();
        return self();
    }

    /**
     * The {@code delivery.timeout.ms} of the producer publishing the outbox; default
     * {@link KafkaMessageBroker#DEFAULT_DELIVERY_TIMEOUT}. A leader's last sends settle within it, so the session
     * timeout must cover it (see {@link KafkaLeaderTransport}).
     *
     * @param timeout the outbox producer's delivery timeout, positive (millisecond precision)
     * @return this builder
     * @throws NullPointerException     if {@code timeout} is {@code null}
     * @throws IllegalArgumentException if {@code timeout} is zero or negative
     */
    public B deliveryTimeout(Duration timeout) {
        KafkaSettings.millis("deliveryTimeout", timeout);
        this.deliveryTimeout = timeout;
        return self();
    }

    /**
     * Takes the delivery timeout from the broker publishing the outbox: the safe way to keep the two equal.
     *
     * @param broker the outbox's broker, whose {@link KafkaMessageBroker#deliveryTimeout()} is read now; not
     *               {@code null}
     * @return this builder
     * @throws NullPointerException if {@code broker} is {@code null}
     */
    public B deliveryTimeoutOf(KafkaMessageBroker broker) {
        return deliveryTimeout(Objects.requireNonNull(broker, "broker").deliveryTimeout());
    }

    /**
     * Whether {@code start} creates a missing leader topic; true by default.
     *
     * @param create {@code true} to create a missing topic (which needs the permission to); {@code false} to
     *               make a missing topic an error of {@code start}, for clusters where topics are provisioned
     * @return this builder
     */
    public B createTopic(boolean create) {
        this.createTopic = create;
        return self();
    }

    /**
     * The replication factor of a leader topic the transport creates; the cluster's
     * {@code default.replication.factor} if not set. With one replica, losing its broker leaves the group
     * without a leader until the broker returns.
     *
     * @param replicas the number of replicas, from 1 to {@value Short#MAX_VALUE} (at most the cluster's brokers,
     *                 which Kafka checks when it creates the topic); ignored if the topic exists
     * @return this builder
     * @throws IllegalArgumentException if {@code replicas} is outside that range
     */
    public B topicReplicationFactor(int replicas) {
        if (replicas < 1 || replicas > Short.MAX_VALUE) {
            throw new IllegalArgumentException("topicReplicationFactor must be between 1 and " + Short.MAX_VALUE
                    + ", was " + replicas);
        }
        this.replicationFactor = Optional.of((short) replicas);
        return self();
    }

    /**
     * How long {@code close} waits to leave the group and close the clients; 5 s by default.
     *
     * @param timeout the longest wait, positive (millisecond precision)
     * @return this builder
     * @throws NullPointerException     if {@code timeout} is {@code null}
     * @throws IllegalArgumentException if {@code timeout} is zero or negative
     */
    public B closeTimeout(Duration timeout) {
        KafkaSettings.millis("closeTimeout", timeout);
        this.closeTimeout = timeout;
        return self();
    }

    /**
     * Validates everything and derives the client configurations.
     *
     * @throws IllegalArgumentException if the topic is missing, a property contradicts an enforced setting, or the
     *                                  timings break a relation in {@link KafkaLeaderTransport}'s documentation
     *                                  (the message names the setting, its value and the bound)
     */
    LeaderGroup.Settings settings() {
        if (topic == null) {
            throw new IllegalArgumentException("leader topic must be set");
        }
        String group = groupId != null ? groupId : topic;
        KafkaSettings c = new KafkaSettings(common);
        c.putAll(consumerOnly.toMap());
        if (c.string(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG) == null) {
            throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG
                    + "' must be set");
        }
        String g = c.string(ConsumerConfig.GROUP_ID_CONFIG);
        if (g != null && !g.equals(group)) {
            throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.GROUP_ID_CONFIG + "' ('" + g
                    + "') contradicts the leader groupId '" + group + "'; set only groupId");
        }
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.require(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false", "the leader group keeps no offsets");
        c.require(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest",
                "only heartbeats sent after the assignment prove anything");
        c.require(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic", "NELI's timing relations need the"
                + " client-side session timeout of the classic group protocol");
        c.forbid(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "a static member keeps its leader partitions through"
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
        admin.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) LeaderGroup.ADMIN_TIMEOUT.toMillis());
        admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) LeaderGroup.ADMIN_TIMEOUT.toMillis());
        admin.remove(AdminClientConfig.CLIENT_ID_CONFIG);

        return new LeaderGroup.Settings(topic, group, createTopic, replicationFactor, closeTimeout, c.toMap(),
                p.toMap(), admin, Duration.ofMillis(session), Duration.ofMillis(maxPoll), Duration.ofMillis(interval));
    }
}
