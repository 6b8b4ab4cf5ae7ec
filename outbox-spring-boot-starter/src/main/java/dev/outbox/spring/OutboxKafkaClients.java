package dev.outbox.spring;

import dev.outbox.DispatcherConfig;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.KafkaShardedLeaderTransport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.core.env.Environment;

import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Builds the outbox's Kafka clients from Spring Boot's {@code spring.kafka.*} and {@code outbox.kafka.*} (or the same
 * settings under another prefix), and turns a setting the clients reject into an {@link OutboxConfigurationException}
 * naming the property that set it. Stateless and thread-safe.
 */
public final class OutboxKafkaClients {
    /** The Kafka builders name a rejected setting as {@code Kafka property 'name'} (see KafkaSettings). */
    private static final Pattern KAFKA_PROPERTY = Pattern.compile("Kafka property '([^']+)'");
    /** Producer settings that Spring Boot binds from dedicated {@code spring.kafka.producer.*} properties. */
    private static final Map<String, String> DEDICATED = Map.of(
            ProducerConfig.ACKS_CONFIG, "acks",
            ProducerConfig.RETRIES_CONFIG, "retries",
            ProducerConfig.BATCH_SIZE_CONFIG, "batch-size",
            ProducerConfig.BUFFER_MEMORY_CONFIG, "buffer-memory",
            ProducerConfig.COMPRESSION_TYPE_CONFIG, "compression-type",
            ProducerConfig.CLIENT_ID_CONFIG, "client-id",
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "bootstrap-servers");

    private OutboxKafkaClients() {
    }

    /**
     * Fails unless the application names its Kafka cluster: Spring Boot would otherwise fall back to
     * localhost:9092, and an outbox silently publishing nowhere is worse than one that does not start.
     */
    static void requireBootstrapServers(Environment env) {
        if (hasBootstrapServers(env)) {
            return;
        }
        throw new OutboxConfigurationException("spring.kafka.bootstrap-servers", "not set: the outbox needs to"
                + " know which Kafka cluster to publish to (Spring Boot's fallback, localhost:9092, is not used)",
                "set spring.kafka.bootstrap-servers to your Kafka brokers, e.g. kafka-1:9092,kafka-2:9092", null);
    }

    /** Whether the application names its Kafka cluster ({@code spring.kafka[.producer].bootstrap-servers}). */
    static boolean hasBootstrapServers(Environment env) {
        Binder binder = Binder.get(env);
        for (String name : List.of("spring.kafka.bootstrap-servers", "spring.kafka.producer.bootstrap-servers")) {
            List<String> servers = binder.bind(name, Bindable.listOf(String.class)).orElse(List.of());
            if (servers.stream().anyMatch(s -> !s.isBlank())) {
                return true;
            }
        }
        return false;
    }

    /** The outbox producer's properties: Boot's producer properties, without its serializers, plus ours. */
    static Map<String, Object> producerProperties(KafkaProperties kafka, OutboxKafkaProperties outbox) {
        Map<String, Object> p = new LinkedHashMap<>(kafka.buildProducerProperties());
        // Boot defaults these for the application's KafkaTemplate; the outbox sends the rows' bytes as they are.
        p.remove(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG);
        p.remove(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG);
        p.putAll(outbox.getProducerProperties());
        return p;
    }

    /** Client properties for leader election: the connection settings (TLS, SASL, ...) consumers and producers share. */
    static Map<String, Object> connectionProperties(KafkaProperties kafka) {
        Set<String> shared = new HashSet<>(ConsumerConfig.configNames());
        shared.retainAll(ProducerConfig.configNames());
        shared.remove(ConsumerConfig.CLIENT_ID_CONFIG);
        Map<String, Object> p = new LinkedHashMap<>();
        kafka.buildAdminProperties().forEach((k, v) -> {
            if (shared.contains(k)) {
                p.put(k, v);
            }
        });
        return p;
    }

    static KafkaMessageBroker broker(Map<String, Object> producerProperties, OutboxKafkaProperties outbox,
                                     Environment env) {
        return translate(env, true, () -> brokerSettings(KafkaMessageBroker.builder().properties(producerProperties),
                "outbox.kafka", outbox).build());
    }

    /**
     * Applies the outbox producer's settings of {@code outbox} to a broker builder: the delivery timeout, the
     * transactional id, the record timestamp and the message id and creation time headers.
     *
     * @param b      the builder, with the producer's client properties set
     * @param prefix the settings' property prefix, e.g. {@code outbox.kafka}: a bad value is reported as
     *               {@code <prefix>.<setting>}
     * @param outbox the settings
     * @return {@code b}
     * @throws OutboxConfigurationException naming the property of a value the builder rejects (the delivery timeout's
     *                                      relation to the client properties is checked by {@code b.build()})
     */
    public static KafkaMessageBroker.Builder brokerSettings(KafkaMessageBroker.Builder b, String prefix,
                                                            OutboxKafkaProperties outbox) {
        setting(prefix + ".delivery-timeout", outbox.getDeliveryTimeout(),
                () -> b.deliveryTimeout(outbox.getDeliveryTimeout()));
        if (outbox.getTransactionalId() != null) {
            setting(prefix + ".transactional-id", outbox.getTransactionalId(),
                    () -> b.transactionalId(outbox.getTransactionalId()));
        }
        setting(prefix + ".record-timestamp", outbox.getRecordTimestamp(),
                () -> b.recordTimestamp(outbox.getRecordTimestamp()));
        String id = outbox.getMessageIdHeader();
        setting(prefix + ".message-id-header", id, () -> b.messageIdHeader(id == null || id.isEmpty() ? null : id));
        if (outbox.getCreatedAtHeader() != null) {
            if (outbox.getCreatedAtHeader().equals(id)) {
                throw new OutboxConfigurationException(prefix + ".created-at-header", "'" + id + "' is the message id"
                        + " header's name too (" + prefix + ".message-id-header)", "give the creation time a header"
                        + " of its own", null);
            }
            setting(prefix + ".created-at-header", outbox.getCreatedAtHeader(),
                    () -> b.createdAtHeader(outbox.getCreatedAtHeader()));
        }
        return b;
    }

    /** @param deliveryTimeout the longest a send to the outbox's broker may take to settle */
    static KafkaLeaderTransport leaderTransport(Map<String, Object> connection, String topic,
                                                OutboxKafkaProperties outbox, DispatcherConfig config,
                                                Duration deliveryTimeout, Environment env) {
        KafkaLeaderTransport.Builder b = leaderTransportBuilder(connection, topic, "outbox.kafka", outbox, config,
                deliveryTimeout);
        return translate(env, false, b::build);
    }

    /**
     * The leader-election transport of the settings {@code outbox} (leader topic, group, replication factor, close
     * timeout) over the Kafka client properties {@code connection}.
     *
     * @param connection the client properties the election's consumer, producer and admin client share (bootstrap
     *                   servers, TLS, SASL); not {@code null}
     * @param topic      the leader topic, one per outbox and the same on every instance that harvests it
     * @param prefix     the settings' property prefix, e.g. {@code outbox.kafka}: a bad value is reported as
     *                   {@code <prefix>.<setting>}, a client setting Kafka rejects as {@code <prefix>}
     * @param outbox     the leader group, replication factor, topic creation and close timeout to apply
     * @param config     the dispatcher's configuration, whose heartbeat and drain timeouts the group's session
     *                   timeouts must cover
     * @param broker     the outbox's broker, whose delivery timeout the session timeout must cover
     * @return a new transport, not started (the dispatcher starts it)
     * @throws OutboxConfigurationException naming the property of a value that is rejected
     */
    public static KafkaLeaderTransport leaderTransport(Map<String, Object> connection, String topic, String prefix,
                                                       OutboxKafkaProperties outbox, DispatcherConfig config,
                                                       KafkaMessageBroker broker) {
        KafkaLeaderTransport.Builder b = leaderTransportBuilder(connection, topic, prefix, outbox, config,
                broker.deliveryTimeout());
        try {
            return b.build();
        } catch (IllegalArgumentException | org.apache.kafka.common.KafkaException e) {
            throw new OutboxConfigurationException(prefix, e.getMessage(), "the outbox enforces the Kafka settings"
                    + " that keep its guarantees; remove the contradicting value", e);
        }
    }

    /** @param deliveryTimeout the longest a send to the outbox's broker may take to settle */
    static KafkaShardedLeaderTransport shardedLeaderTransport(Map<String, Object> connection, String topic, int shards,
                                                              OutboxKafkaProperties outbox, DispatcherConfig config,
                                                              Duration deliveryTimeout, Environment env) {
        KafkaShardedLeaderTransport.Builder b = shardedLeaderTransportBuilder(connection, topic, shards, "outbox.kafka",
                outbox, config, deliveryTimeout);
        return translate(env, false, b::build);
    }

    /**
     * The shard-leadership transport of a sharded outbox ({@code shards} &gt; 1): the settings of
     * {@link #leaderTransport(Map, String, String, OutboxKafkaProperties, DispatcherConfig, KafkaMessageBroker)}
     * over a leader topic with one partition per shard.
     *
     * @param connection the client properties the election's consumer, producer and admin client share (bootstrap
     *                   servers, TLS, SASL); not {@code null}
     * @param topic      the leader topic, which must have (or is created with) one partition per shard
     * @param shards     the store's shard count ({@code Store.shards()})
     * @param prefix     the settings' property prefix, e.g. {@code outbox.kafka}: a bad value is reported as
     *                   {@code <prefix>.<setting>}, a client setting Kafka rejects as {@code <prefix>}
     * @param outbox     the leader group, replication factor, topic creation and close timeout to apply
     * @param config     the dispatcher's configuration, whose heartbeat and drain timeouts the group's session
     *                   timeouts must cover
     * @param broker     the outbox's broker, whose delivery timeout the session timeout must cover
     * @return a new transport, not started (the dispatcher starts it)
     * @throws OutboxConfigurationException naming the property of a value that is rejected
     */
    public static KafkaShardedLeaderTransport shardedLeaderTransport(Map<String, Object> connection, String topic,
                                                                     int shards, String prefix,
                                                                     OutboxKafkaProperties outbox,
                                                                     DispatcherConfig config,
                                                                     KafkaMessageBroker broker) {
        KafkaShardedLeaderTransport.Builder b = shardedLeaderTransportBuilder(connection, topic, shards, prefix, outbox,
                config, broker.deliveryTimeout());
        try {
            return b.build();
        } catch (IllegalArgumentException | org.apache.kafka.common.KafkaException e) {
            throw new OutboxConfigurationException(prefix, e.getMessage(), "the outbox enforces the Kafka settings"
                    + " that keep its guarantees; remove the contradicting value", e);
        }
    }

    /** The same settings as {@link #leaderTransportBuilder}; the builders share no public type. */
    private static KafkaShardedLeaderTransport.Builder shardedLeaderTransportBuilder(
            Map<String, Object> connection, String topic, int shards, String prefix, OutboxKafkaProperties outbox,
            DispatcherConfig config, Duration deliveryTimeout) {
        KafkaShardedLeaderTransport.Builder b = KafkaShardedLeaderTransport.builder().properties(connection);
        b.shards(shards);
        setting(prefix + ".leader-topic", topic, () -> b.topic(topic));
        if (outbox.getLeaderGroup() != null) {
            setting(prefix + ".leader-group", outbox.getLeaderGroup(), () -> b.groupId(outbox.getLeaderGroup()));
        }
        if (outbox.getLeaderTopicReplicationFactor() != null) {
            setting(prefix + ".leader-topic-replication-factor", outbox.getLeaderTopicReplicationFactor(),
                    () -> b.topicReplicationFactor(outbox.getLeaderTopicReplicationFactor()));
        }
        setting(prefix + ".close-timeout", outbox.getCloseTimeout(), () -> b.closeTimeout(outbox.getCloseTimeout()));
        b.createTopic(outbox.isCreateLeaderTopic()).dispatcherConfig(config).deliveryTimeout(deliveryTimeout);
        return b;
    }

    private static KafkaLeaderTransport.Builder leaderTransportBuilder(Map<String, Object> connection, String topic,
                                                                       String prefix, OutboxKafkaProperties outbox,
                                                                       DispatcherConfig config,
                                                                       Duration deliveryTimeout) {
        KafkaLeaderTransport.Builder b = KafkaLeaderTransport.builder().properties(connection);
        setting(prefix + ".leader-topic", topic, () -> b.topic(topic));
        if (outbox.getLeaderGroup() != null) {
            setting(prefix + ".leader-group", outbox.getLeaderGroup(), () -> b.groupId(outbox.getLeaderGroup()));
        }
        if (outbox.getLeaderTopicReplicationFactor() != null) {
            setting(prefix + ".leader-topic-replication-factor", outbox.getLeaderTopicReplicationFactor(),
                    () -> b.topicReplicationFactor(outbox.getLeaderTopicReplicationFactor()));
        }
        setting(prefix + ".close-timeout", outbox.getCloseTimeout(), () -> b.closeTimeout(outbox.getCloseTimeout()));
        b.createTopic(outbox.isCreateLeaderTopic()).dispatcherConfig(config).deliveryTimeout(deliveryTimeout);
        return b;
    }

    private static void setting(String property, Object value, Runnable setter) {
        try {
            setter.run();
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new OutboxConfigurationException(property, "'" + value + "' is not valid: " + e.getMessage(),
                    "use a value Kafka accepts (see the message)", e);
        }
    }

    /** Runs a Kafka builder, naming the Spring property behind a setting it rejects. */
    private static <T> T translate(Environment env, boolean producer, Supplier<T> build) {
        try {
            return build.get();
        } catch (IllegalArgumentException | org.apache.kafka.common.KafkaException e) {
            Matcher m = KAFKA_PROPERTY.matcher(String.valueOf(e.getMessage()));
            String kafkaName = m.find() ? m.group(1) : null;
            String property = kafkaName == null ? (producer ? "spring.kafka.producer" : "spring.kafka")
                    : springProperty(env, kafkaName, producer);
            String problem = e.getMessage();
            if (property.equals("outbox.kafka.delivery-timeout")) {
                problem = "'" + env.getProperty(property, "8s") + "' is not valid: " + problem;
            }
            throw new OutboxConfigurationException(property, problem, "the outbox enforces the Kafka settings"
                    + " that keep its guarantees; remove the contradicting value (settings meant for your own"
                    + " KafkaTemplate cannot be shared with the outbox producer)", e);
        }
    }

    /** The Spring property that set the Kafka client setting {@code name}, as far as it can be told. */
    static String springProperty(Environment env, String name, boolean producer) {
        Binder binder = Binder.get(env);
        String dedicated = DEDICATED.get(name);
        if (producer && name.equals(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG)) {
            // The broker's deliveryTimeout(outbox.kafka.delivery-timeout, 8 s by default) overrides any
            // delivery.timeout.ms of the client properties: the value Kafka judged is always this property's.
            return "outbox.kafka.delivery-timeout";
        }
        if (producer) {
            if (bound(binder, "outbox.kafka.producer-properties[" + name + "]")) {
                return "outbox.kafka.producer-properties[" + name + "]";
            }
            if (dedicated != null && bound(binder, "spring.kafka.producer." + dedicated)) {
                return "spring.kafka.producer." + dedicated;
            }
            if (bound(binder, "spring.kafka.producer.properties[" + name + "]")) {
                return "spring.kafka.producer.properties[" + name + "]";
            }
        }
        if (dedicated != null && !name.equals(ProducerConfig.ACKS_CONFIG) && !name.equals(ProducerConfig.RETRIES_CONFIG)
                && bound(binder, "spring.kafka." + dedicated)) {
            return "spring.kafka." + dedicated;
        }
        if (bound(binder, "spring.kafka.properties[" + name + "]")) {
            return "spring.kafka.properties[" + name + "]";
        }
        return producer ? "spring.kafka.producer.properties[" + name + "]" : "spring.kafka.properties[" + name + "]";
    }

    private static boolean bound(Binder binder, String name) {
        return binder.bind(name, Bindable.of(String.class)).isBound();
    }
}
