package dev.outbox.spring;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/** What the outbox adds to {@code spring.kafka.*}: leader election and the outbox producer's bounds. */
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

    public String getLeaderTopic() {
        return leaderTopic;
    }

    public void setLeaderTopic(String leaderTopic) {
        this.leaderTopic = leaderTopic;
    }

    public String getLeaderGroup() {
        return leaderGroup;
    }

    public void setLeaderGroup(String leaderGroup) {
        this.leaderGroup = leaderGroup;
    }

    public boolean isCreateLeaderTopic() {
        return createLeaderTopic;
    }

    public void setCreateLeaderTopic(boolean createLeaderTopic) {
        this.createLeaderTopic = createLeaderTopic;
    }

    public Integer getLeaderTopicReplicationFactor() {
        return leaderTopicReplicationFactor;
    }

    public void setLeaderTopicReplicationFactor(Integer leaderTopicReplicationFactor) {
        this.leaderTopicReplicationFactor = leaderTopicReplicationFactor;
    }

    public Duration getDeliveryTimeout() {
        return deliveryTimeout;
    }

    public void setDeliveryTimeout(Duration deliveryTimeout) {
        this.deliveryTimeout = deliveryTimeout;
    }

    public Duration getCloseTimeout() {
        return closeTimeout;
    }

    public void setCloseTimeout(Duration closeTimeout) {
        this.closeTimeout = closeTimeout;
    }

    public Map<String, String> getProducerProperties() {
        return producerProperties;
    }

    public void setProducerProperties(Map<String, String> producerProperties) {
        this.producerProperties = producerProperties;
    }
}
