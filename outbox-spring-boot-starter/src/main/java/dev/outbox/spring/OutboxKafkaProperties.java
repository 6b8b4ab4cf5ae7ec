package dev.outbox.spring;

import dev.outbox.broker.kafka.KafkaMessageBroker;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the outbox adds to {@code spring.kafka.*}: leader election and the outbox producer's bounds. The starter's
 * {@code outbox.kafka.*} properties; the keys named below are relative to that prefix. The sidecar binds each
 * outbox's {@code sidecar.outboxes.<name>.kafka.*} to it too, with its connection from {@code sidecar.kafka.*}
 * instead of {@code spring.kafka.*} and {@code <name>-outbox-leader} as the default leader topic. With
 * {@code outbox.broker=handlers} there is no producer, and only the leader-election settings apply (while
 * {@code outbox.dispatcher.leader-election} is on).
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxKafkaProperties {
    /**
     * Leader topic, one per outbox: every instance harvesting the same outbox table must use the same one.
     * Defaults to "<spring.application.name>-outbox-leader".
     */
    private String leaderTopic;
    /** Leader consumer group; defaults to the leader topic. */
    private String leaderGroup;
    /** Whether to create a missing leader topic at start-up. */
    private boolean createLeaderTopic = true;
    /** Replication factor of a leader topic the outbox creates; the cluster's default when not set. */
    private Integer leaderTopicReplicationFactor;
    /** The outbox producer's delivery.timeout.ms: every send completes within it (at most 2 minutes). */
    private Duration deliveryTimeout = Duration.ofSeconds(8);
    /** How long closing the leader-election clients may take. */
    private Duration closeTimeout = Duration.ofSeconds(5);
    /**
     * Kafka producer properties for the outbox producer only, applied over spring.kafka.producer.*. The
     * settings the outbox enforces (acks=all, idempotence, ...) cannot be contradicted here either.
     */
    private Map<String, String> producerProperties = new LinkedHashMap<>();
    /**
     * Publish with Kafka's transactional producer under this id, the same on every instance that may lead this
     * outbox (one per outbox): a new leader fences the previous leader's producer. Unset: the idempotent producer
     * without transactions. Consumers must read with isolation.level=read_committed to benefit.
     */
    private String transactionalId;
    /** Which time records carry as their timestamp: the row's creation time (created-at) or the send time. */
    private KafkaMessageBroker.RecordTimestamp recordTimestamp = KafkaMessageBroker.RecordTimestamp.CREATED_AT;
    /**
     * The header carrying each record's message id (the inbox's deduplication key); empty to send none.
     */
    private String messageIdHeader = KafkaMessageBroker.DEFAULT_MESSAGE_ID_HEADER;
    /** A header carrying each record's creation time (ISO-8601, UTC); none when not set. */
    private String createdAtHeader;

    /**
     * {@return the leader-election topic, one per outbox and the same on every instance harvesting it, or {@code null}
     * (the default) for {@code <spring.application.name>-outbox-leader}} Bound from the {@code leader-topic} property.
     */
    public String getLeaderTopic() {
        return leaderTopic;
    }

    /**
     * Sets the {@code leader-topic} property.
     *
     * @param leaderTopic a valid Kafka topic name not starting with {@code __}, or {@code null}; checked at start-up
     */
    public void setLeaderTopic(String leaderTopic) {
        this.leaderTopic = leaderTopic;
    }

    /**
     * {@return the leader-election consumer group, or {@code null} (the default) for the leader topic's name} Bound
     * from the {@code leader-group} property.
     */
    public String getLeaderGroup() {
        return leaderGroup;
    }

    /**
     * Sets the {@code leader-group} property.
     *
     * @param leaderGroup a group id (no whitespace, at most 255 characters), or {@code null}; checked at start-up
     */
    public void setLeaderGroup(String leaderGroup) {
        this.leaderGroup = leaderGroup;
    }

    /**
     * {@return whether a missing leader topic is created at start-up; {@code true} by default} Bound from the
     * {@code create-leader-topic} property.
     */
    public boolean isCreateLeaderTopic() {
        return createLeaderTopic;
    }

    /**
     * Sets the {@code create-leader-topic} property.
     *
     * @param createLeaderTopic {@code false} where topics are provisioned: a missing one then fails the start-up
     */
    public void setCreateLeaderTopic(boolean createLeaderTopic) {
        this.createLeaderTopic = createLeaderTopic;
    }

    /**
     * {@return the replication factor of a leader topic the outbox creates, or {@code null} (the default) for the
     * cluster's {@code default.replication.factor}} Bound from the {@code leader-topic-replication-factor} property.
     */
    public Integer getLeaderTopicReplicationFactor() {
        return leaderTopicReplicationFactor;
    }

    /**
     * Sets the {@code leader-topic-replication-factor} property.
     *
     * @param leaderTopicReplicationFactor 1 to 32767, or {@code null}; ignored when the topic exists
     */
    public void setLeaderTopicReplicationFactor(Integer leaderTopicReplicationFactor) {
        this.leaderTopicReplicationFactor = leaderTopicReplicationFactor;
    }

    /**
     * {@return the outbox producer's {@code delivery.timeout.ms}, within which every send completes; 8 seconds by
     * default} Bound from the {@code delivery-timeout} property. Not used with {@code outbox.broker=handlers}, where
     * {@code outbox.handlers.timeout} bounds a send.
     */
    public Duration getDeliveryTimeout() {
        return deliveryTimeout;
    }

    /**
     * Sets the {@code delivery-timeout} property.
     *
     * @param deliveryTimeout a positive duration of at most 2 minutes (millisecond precision); checked at start-up
     */
    public void setDeliveryTimeout(Duration deliveryTimeout) {
        this.deliveryTimeout = deliveryTimeout;
    }

    /**
     * {@return how long closing the leader-election clients may take; 5 seconds by default} Bound from the
     * {@code close-timeout} property.
     */
    public Duration getCloseTimeout() {
        return closeTimeout;
    }

    /**
     * Sets the {@code close-timeout} property.
     *
     * @param closeTimeout a positive duration; checked at start-up
     */
    public void setCloseTimeout(Duration closeTimeout) {
        this.closeTimeout = closeTimeout;
    }

    /**
     * {@return Kafka producer properties for the outbox producer only, applied over {@code spring.kafka.producer.*};
     * empty by default, never {@code null} as bound} Bound from the {@code producer-properties} property. Not used with
     * {@code outbox.broker=handlers}, which has no producer.
     */
    public Map<String, String> getProducerProperties() {
        return producerProperties;
    }

    /**
     * Sets the {@code producer-properties} property.
     *
     * @param producerProperties the properties by Kafka name; the settings the outbox enforces ({@code acks=all},
     *                           idempotence, ...) cannot be contradicted here either
     */
    public void setProducerProperties(Map<String, String> producerProperties) {
        this.producerProperties = producerProperties;
    }

    /**
     * {@return the transactional id of the outbox producer, or {@code null} (the default) for the idempotent producer
     * without transactions} Bound from the {@code transactional-id} property.
     */
    public String getTransactionalId() {
        return transactionalId;
    }

    /**
     * Sets the {@code transactional-id} property.
     *
     * @param transactionalId 1 to 255 characters without whitespace, the same on every instance of this outbox, or
     *                        {@code null}; checked at start-up
     */
    public void setTransactionalId(String transactionalId) {
        this.transactionalId = transactionalId;
    }

    /**
     * {@return which time records carry as their timestamp; {@code CREATED_AT} by default} Bound from the
     * {@code record-timestamp} property.
     */
    public KafkaMessageBroker.RecordTimestamp getRecordTimestamp() {
        return recordTimestamp;
    }

    /**
     * Sets the {@code record-timestamp} property.
     *
     * @param recordTimestamp {@code CREATED_AT} or {@code SEND_TIME} (bound from {@code created-at} or
     *                        {@code send-time}); not {@code null}
     */
    public void setRecordTimestamp(KafkaMessageBroker.RecordTimestamp recordTimestamp) {
        this.recordTimestamp = recordTimestamp;
    }

    /**
     * {@return the header carrying each record's message id; {@code outbox-message-id} by default, empty for none}
     * Bound from the {@code message-id-header} property.
     */
    public String getMessageIdHeader() {
        return messageIdHeader;
    }

    /**
     * Sets the {@code message-id-header} property.
     *
     * @param messageIdHeader the header's name (no surrounding whitespace, not the created-at header's), or empty to
     *                        send no message id; checked at start-up
     */
    public void setMessageIdHeader(String messageIdHeader) {
        this.messageIdHeader = messageIdHeader;
    }

    /**
     * {@return the header carrying each record's creation time, or {@code null} (the default) for none} Bound from
     * the {@code created-at-header} property.
     */
    public String getCreatedAtHeader() {
        return createdAtHeader;
    }

    /**
     * Sets the {@code created-at-header} property.
     *
     * @param createdAtHeader the header's name (no surrounding whitespace, not the message id header's), or
     *                        {@code null}; checked at start-up
     */
    public void setCreatedAtHeader(String createdAtHeader) {
        this.createdAtHeader = createdAtHeader;
    }
}
