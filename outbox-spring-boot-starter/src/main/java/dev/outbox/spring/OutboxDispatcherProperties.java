package dev.outbox.spring;

import dev.outbox.DispatcherConfig;
import org.springframework.util.unit.DataSize;

import java.time.Duration;

/**
 * The dispatcher that harvests the outbox; see {@link DispatcherConfig} for what each setting does. The starter's
 * {@code outbox.dispatcher.*} properties (the sidecar's {@code sidecar.outboxes.<name>.dispatcher.*}, with the same
 * keys and defaults but for {@code name}, which defaults to the outbox's name there); the keys named below are
 * relative to that prefix. The settings that make up a {@link DispatcherConfig} are checked together by
 * {@link #toConfig}, at start-up.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxDispatcherProperties {
    /** Whether this instance runs a dispatcher; turn off on instances that only write messages. */
    private boolean enabled = true;
    /**
     * How instances elect the leader: kafka (a consumer group on the leader topic; needs Kafka), database (a lease in
     * the outbox's own database; needs a SQL store), or none (only when exactly one instance runs a dispatcher for
     * this outbox: it then always leads). true and false are read as kafka and none.
     */
    private String leaderElection = "kafka";
    /** Names the dispatcher's threads and log lines. */
    private String name = "outbox";
    /** Rows marked per mark statement (mark harvest); the least room worth a read (cursor harvest). */
    private int markBatchSize = 100;
    /** Records sent but not yet acknowledged and purged. */
    private int maxInFlightRecords = 1000;
    /**
     * Bytes (value + key + headers) of records read and not yet acknowledged and purged; the leader stops reading
     * when they reach it, and a record larger than it is sent alone. Default: an eighth of the JVM's maximum heap.
     */
    private DataSize maxInFlightBytes;
    /** Most ids purged (or reset) by one statement. */
    private int purgeBatchSize = 1000;
    /** Leader-election poll and heartbeat interval; the longest wait between marks of an idle outbox. */
    private Duration pollInterval = Duration.ofMillis(100);
    /** First wait after a mark found nothing; doubles up to poll-interval. */
    private Duration markBackoff = Duration.ofMillis(10);
    /** A leader that sees none of its own heartbeats for this long fences itself. */
    private Duration heartbeatTimeout = Duration.ofSeconds(5);
    /** A send still unacknowledged after this long is reported as stuck. */
    private Duration queueTimeout = Duration.ofSeconds(30);
    /** First wait after a failed store call; doubles on repeated failures. */
    private Duration ioErrorBackoff = Duration.ofMillis(500);
    /** Cap of the store calls' backoff. */
    private Duration maxIoErrorBackoff = Duration.ofSeconds(10);
    /** The backoff before a failed record's first retry; as io-error-backoff when not set. */
    private Duration deliveryBackoff;
    /** Cap of the deliveries' backoff; as max-io-error-backoff when not set. */
    private Duration maxDeliveryBackoff;
    /** Cursor harvest: the least free room in flight worth a read; as mark-batch-size when not set. */
    private Integer readBatchSize;
    /** Failed deliveries after which a record is parked. */
    private int maxAttempts = 10;
    /** How long shutdown (and a leadership revocation) waits for in-flight records. */
    private Duration drainTimeout = Duration.ofSeconds(10);
    /** Period of throughput readings and outbox samples. */
    private Duration metricsInterval = Duration.ofSeconds(5);
    /** How the leader reads the outbox: cursor (read, send, delete on acknowledgement) or mark. */
    private DispatcherConfig.Harvest harvest = DispatcherConfig.Harvest.CURSOR;
    /** Cursor harvest only: how often a caught-up leader reads the table from its head again. */
    private Duration rescanInterval = Duration.ofSeconds(30);
    /**
     * What happens to a key once one of its records is parked: move-on (its later records flow) or hold-key (they
     * wait until the parked rows are replayed or discarded).
     */
    private DispatcherConfig.AfterPark afterPark = DispatcherConfig.AfterPark.MOVE_ON;
    /**
     * What happens to a parked latest-only record once a newer record of its key is delivered: discard (the default:
     * a replay cannot send the older value after the newer one) or keep (for an operator; logged at WARN).
     */
    private DispatcherConfig.SupersededParked supersededParked = DispatcherConfig.SupersededParked.DISCARD;

    /**
     * {@return whether this instance runs a dispatcher; {@code true} by default} Bound from the {@code enabled}
     * property.
     */
    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Sets the {@code enabled} property.
     *
     * @param enabled {@code false} on instances that only write messages
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /**
     * {@return how instances elect the leader: {@code kafka} (the default), {@code database} or {@code none}, as set}
     * Bound from the {@code leader-election} property; {@link #election(String)} reads it.
     */
    public String getLeaderElection() {
        return leaderElection;
    }

    /**
     * Sets the {@code leader-election} property.
     *
     * @param leaderElection {@code kafka}, {@code database} or {@code none} ({@code true} and {@code false}, its
     *                       values before it had three, are read as {@code kafka} and {@code none}); checked by
     *                       {@link #election(String)} at start-up
     */
    public void setLeaderElection(String leaderElection) {
        this.leaderElection = leaderElection;
    }

    /**
     * The election the {@code leader-election} property chooses.
     *
     * @param key the property's full name, for the message ({@code outbox.dispatcher.leader-election}, or the
     *            sidecar's)
     * @return the election
     * @throws OutboxConfigurationException naming {@code key} and the value if it is none of the choices
     */
    public LeaderElection election(String key) {
        return LeaderElection.parse(key, leaderElection);
    }

    /**
     * {@return the name of the dispatcher's threads and log lines (and of the handler threads, with
     * {@code outbox.broker=handlers}); {@code outbox} by default} Bound from the {@code name} property.
     */
    public String getName() {
        return name;
    }

    /**
     * Sets the {@code name} property.
     *
     * @param name a short name, not blank, distinct per outbox in one JVM; checked at start-up
     */
    public void setName(String name) {
        this.name = name;
    }

    /**
     * {@return rows marked per mark statement (mark harvest), or the least room worth a read (cursor harvest); 100 by
     * default} Bound from the {@code mark-batch-size} property.
     */
    public int getMarkBatchSize() {
        return markBatchSize;
    }

    /**
     * Sets the {@code mark-batch-size} property.
     *
     * @param markBatchSize at least 1 and at most {@code max-in-flight-records}; checked by {@link #toConfig}
     */
    public void setMarkBatchSize(int markBatchSize) {
        this.markBatchSize = markBatchSize;
    }

    /**
     * {@return how many records may be sent and not yet acknowledged and purged; 1000 by default} Bound from the
     * {@code max-in-flight-records} property.
     */
    public int getMaxInFlightRecords() {
        return maxInFlightRecords;
    }

    /**
     * Sets the {@code max-in-flight-records} property.
     *
     * @param maxInFlightRecords at least 1; checked by {@link #toConfig}
     */
    public void setMaxInFlightRecords(int maxInFlightRecords) {
        this.maxInFlightRecords = maxInFlightRecords;
    }

    /**
     * {@return the bytes (value, key and headers) of records read and not yet acknowledged and purged at which the
     * leader stops reading, or {@code null} (the default) for an eighth of the JVM's maximum heap} Bound from the
     * {@code max-in-flight-bytes} property.
     */
    public DataSize getMaxInFlightBytes() {
        return maxInFlightBytes;
    }

    /**
     * Sets the {@code max-in-flight-bytes} property.
     *
     * @param maxInFlightBytes at least 1 byte (for example {@code 64MB}), or {@code null}; checked by {@link #toConfig}
     */
    public void setMaxInFlightBytes(DataSize maxInFlightBytes) {
        this.maxInFlightBytes = maxInFlightBytes;
    }

    /**
     * {@return the most settled records one store call writes: ids purged, or failures recorded; 1000 by default} Bound
     * from the {@code purge-batch-size} property.
     */
    public int getPurgeBatchSize() {
        return purgeBatchSize;
    }

    /**
     * Sets the {@code purge-batch-size} property.
     *
     * @param purgeBatchSize at least 1; checked by {@link #toConfig}
     */
    public void setPurgeBatchSize(int purgeBatchSize) {
        this.purgeBatchSize = purgeBatchSize;
    }

    /**
     * {@return the leader-election poll and heartbeat interval, and the longest wait between two reads of an idle
     * outbox; 100 ms by default} Bound from the {@code poll-interval} property.
     */
    public Duration getPollInterval() {
        return pollInterval;
    }

    /**
     * Sets the {@code poll-interval} property.
     *
     * @param pollInterval a positive duration, at most a third of {@code heartbeat-timeout}; checked by
     *                     {@link #toConfig}
     */
    public void setPollInterval(Duration pollInterval) {
        this.pollInterval = pollInterval;
    }

    /**
     * {@return the first wait after a read that found nothing, doubling up to {@code poll-interval}; 10 ms by default}
     * Bound from the {@code mark-backoff} property.
     */
    public Duration getMarkBackoff() {
        return markBackoff;
    }

    /**
     * Sets the {@code mark-backoff} property.
     *
     * @param markBackoff a positive duration, at most {@code poll-interval}; checked by {@link #toConfig}
     */
    public void setMarkBackoff(Duration markBackoff) {
        this.markBackoff = markBackoff;
    }

    /**
     * {@return a leader that sees none of its own heartbeats for this long fences itself; 5 seconds by default} Bound
     * from the {@code heartbeat-timeout} property.
     */
    public Duration getHeartbeatTimeout() {
        return heartbeatTimeout;
    }

    /**
     * Sets the {@code heartbeat-timeout} property.
     *
     * @param heartbeatTimeout a positive duration, at least 3 x {@code poll-interval}; checked by {@link #toConfig}
     */
    public void setHeartbeatTimeout(Duration heartbeatTimeout) {
        this.heartbeatTimeout = heartbeatTimeout;
    }

    /**
     * {@return a send still unacknowledged after this long is reported as stuck; 30 seconds by default} Bound from the
     * {@code queue-timeout} property.
     */
    public Duration getQueueTimeout() {
        return queueTimeout;
    }

    /**
     * Sets the {@code queue-timeout} property.
     *
     * @param queueTimeout a positive duration; checked by {@link #toConfig}
     */
    public void setQueueTimeout(Duration queueTimeout) {
        this.queueTimeout = queueTimeout;
    }

    /**
     * {@return the first wait after a failed store call, doubling on repeated failures (and the deliveries' too, unless
     * {@code delivery-backoff} is set); 500 ms by default} Bound from the {@code io-error-backoff} property.
     */
    public Duration getIoErrorBackoff() {
        return ioErrorBackoff;
    }

    /**
     * Sets the {@code io-error-backoff} property.
     *
     * @param ioErrorBackoff a positive duration, at most {@code max-io-error-backoff}; checked by {@link #toConfig}
     */
    public void setIoErrorBackoff(Duration ioErrorBackoff) {
        this.ioErrorBackoff = ioErrorBackoff;
    }

    /**
     * {@return the cap of the I/O error backoff; 10 seconds by default} Bound from the {@code max-io-error-backoff}
     * property.
     */
    public Duration getMaxIoErrorBackoff() {
        return maxIoErrorBackoff;
    }

    /**
     * Sets the {@code max-io-error-backoff} property.
     *
     * @param maxIoErrorBackoff a positive duration; checked by {@link #toConfig}
     */
    public void setMaxIoErrorBackoff(Duration maxIoErrorBackoff) {
        this.maxIoErrorBackoff = maxIoErrorBackoff;
    }

    /**
     * {@return the backoff before a failed record's first retry, doubling per failure up to
     * {@code max-delivery-backoff}; {@code null} (the default) for the {@code io-error-backoff}} Bound from the
     * {@code delivery-backoff} property.
     */
    public Duration getDeliveryBackoff() {
        return deliveryBackoff;
    }

    /**
     * Sets the {@code delivery-backoff} property.
     *
     * @param deliveryBackoff a positive duration, at most {@code max-delivery-backoff}, or {@code null}; checked by
     *                        {@link #toConfig}
     */
    public void setDeliveryBackoff(Duration deliveryBackoff) {
        this.deliveryBackoff = deliveryBackoff;
    }

    /**
     * {@return the cap of the deliveries' backoff; {@code null} (the default) for the {@code max-io-error-backoff}}
     * Bound from the {@code max-delivery-backoff} property.
     */
    public Duration getMaxDeliveryBackoff() {
        return maxDeliveryBackoff;
    }

    /**
     * Sets the {@code max-delivery-backoff} property.
     *
     * @param maxDeliveryBackoff a positive duration, or {@code null}; checked by {@link #toConfig}
     */
    public void setMaxDeliveryBackoff(Duration maxDeliveryBackoff) {
        this.maxDeliveryBackoff = maxDeliveryBackoff;
    }

    /**
     * {@return the cursor harvest's least free room in flight worth a read; {@code null} (the default) for the
     * {@code mark-batch-size}} Bound from the {@code read-batch-size} property.
     */
    public Integer getReadBatchSize() {
        return readBatchSize;
    }

    /**
     * Sets the {@code read-batch-size} property.
     *
     * @param readBatchSize at least 1 and at most {@code max-in-flight-records}, or {@code null}; checked by
     *                      {@link #toConfig}
     */
    public void setReadBatchSize(Integer readBatchSize) {
        this.readBatchSize = readBatchSize;
    }

    /**
     * {@return the failed deliveries after which a record is parked; 10 by default} Bound from the {@code max-attempts}
     * property.
     */
    public int getMaxAttempts() {
        return maxAttempts;
    }

    /**
     * Sets the {@code max-attempts} property.
     *
     * @param maxAttempts at least 1; checked by {@link #toConfig}
     */
    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    /**
     * {@return how long shutdown, and a revocation of leadership, waits for the records in flight; 10 seconds by
     * default} Bound from the {@code drain-timeout} property.
     */
    public Duration getDrainTimeout() {
        return drainTimeout;
    }

    /**
     * Sets the {@code drain-timeout} property.
     *
     * @param drainTimeout a positive duration; checked by {@link #toConfig}
     */
    public void setDrainTimeout(Duration drainTimeout) {
        this.drainTimeout = drainTimeout;
    }

    /**
     * {@return the period of throughput readings and of the leader's outbox samples (backlog, lag); 5 seconds by
     * default} Bound from the {@code metrics-interval} property.
     */
    public Duration getMetricsInterval() {
        return metricsInterval;
    }

    /**
     * Sets the {@code metrics-interval} property.
     *
     * @param metricsInterval a positive duration; checked by {@link #toConfig}
     */
    public void setMetricsInterval(Duration metricsInterval) {
        this.metricsInterval = metricsInterval;
    }

    /**
     * {@return how the leader reads the outbox, {@code CURSOR} (the default: read, send, delete on acknowledgement) or
     * {@code MARK}} Bound from the {@code harvest} property.
     */
    public DispatcherConfig.Harvest getHarvest() {
        return harvest;
    }

    /**
     * Sets the {@code harvest} property.
     *
     * @param harvest the harvest; not {@code null} (checked by {@link #toConfig})
     */
    public void setHarvest(DispatcherConfig.Harvest harvest) {
        this.harvest = harvest;
    }

    /**
     * {@return cursor harvest only, how often a caught-up leader reads the table from its head again; 30 seconds by
     * default} Bound from the {@code rescan-interval} property.
     */
    public Duration getRescanInterval() {
        return rescanInterval;
    }

    /**
     * Sets the {@code rescan-interval} property.
     *
     * @param rescanInterval a positive duration; checked by {@link #toConfig}
     */
    public void setRescanInterval(Duration rescanInterval) {
        this.rescanInterval = rescanInterval;
    }

    /**
     * {@return what happens to a key once one of its records is parked, {@code MOVE_ON} (the default: its later records
     * flow) or {@code HOLD_KEY} (they wait until the parked rows are replayed or discarded)} Bound from the
     * {@code after-park} property.
     */
    public DispatcherConfig.AfterPark getAfterPark() {
        return afterPark;
    }

    /**
     * Sets the {@code after-park} property.
     *
     * @param afterPark the policy; not {@code null} (checked by {@link #toConfig})
     */
    public void setAfterPark(DispatcherConfig.AfterPark afterPark) {
        this.afterPark = afterPark;
    }

    /**
     * {@return what happens to a parked latest-only record once a newer record of its key is delivered,
     * {@code DISCARD} (the default) or {@code KEEP}} Bound from the {@code superseded-parked} property.
     */
    public DispatcherConfig.SupersededParked getSupersededParked() {
        return supersededParked;
    }

    /**
     * Sets the {@code superseded-parked} property.
     *
     * @param supersededParked the policy; not {@code null} (checked by {@link #toConfig})
     */
    public void setSupersededParked(DispatcherConfig.SupersededParked supersededParked) {
        this.supersededParked = supersededParked;
    }

    /**
     * The {@link DispatcherConfig} of these settings.
     *
     * @param prefix the settings' property prefix, e.g. {@code outbox.dispatcher}: a bad value is reported as
     *               {@code <prefix>.<setting>}
     * @return a new configuration with every setting of this object (the default heap share where
     *         {@code max-in-flight-bytes} is not set)
     * @throws OutboxConfigurationException naming the property of a bad value, or the prefix for a bad relation
     *                                      between values
     */
    public DispatcherConfig toConfig(String prefix) {
        DispatcherConfig.Builder b = DispatcherConfig.builder();
        OutboxProperties.set(prefix + ".mark-batch-size", markBatchSize, b::markBatchSize);
        OutboxProperties.set(prefix + ".max-in-flight-records", maxInFlightRecords, b::maxInFlightRecords);
        if (maxInFlightBytes != null) {
            OutboxProperties.set(prefix + ".max-in-flight-bytes", maxInFlightBytes, v -> b.maxInFlightBytes(v.toBytes()));
        }
        OutboxProperties.set(prefix + ".purge-batch-size", purgeBatchSize, b::purgeBatchSize);
        OutboxProperties.set(prefix + ".poll-interval", pollInterval, b::pollInterval);
        OutboxProperties.set(prefix + ".mark-backoff", markBackoff, b::markBackoff);
        OutboxProperties.set(prefix + ".heartbeat-timeout", heartbeatTimeout, b::heartbeatTimeout);
        OutboxProperties.set(prefix + ".queue-timeout", queueTimeout, b::queueTimeout);
        OutboxProperties.set(prefix + ".io-error-backoff", ioErrorBackoff, b::ioErrorBackoff);
        OutboxProperties.set(prefix + ".max-io-error-backoff", maxIoErrorBackoff, b::maxIoErrorBackoff);
        if (deliveryBackoff != null) {
            OutboxProperties.set(prefix + ".delivery-backoff", deliveryBackoff, b::deliveryBackoff);
        }
        if (maxDeliveryBackoff != null) {
            OutboxProperties.set(prefix + ".max-delivery-backoff", maxDeliveryBackoff, b::maxDeliveryBackoff);
        }
        if (readBatchSize != null) {
            OutboxProperties.set(prefix + ".read-batch-size", readBatchSize, b::readBatchSize);
        }
        OutboxProperties.set(prefix + ".max-attempts", maxAttempts, b::maxAttempts);
        OutboxProperties.set(prefix + ".drain-timeout", drainTimeout, b::drainTimeout);
        OutboxProperties.set(prefix + ".metrics-interval", metricsInterval, b::metricsInterval);
        OutboxProperties.set(prefix + ".harvest", harvest, b::harvest);
        OutboxProperties.set(prefix + ".rescan-interval", rescanInterval, b::rescanInterval);
        OutboxProperties.set(prefix + ".after-park", afterPark, b::afterPark);
        OutboxProperties.set(prefix + ".superseded-parked", supersededParked, b::supersededParked);
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new OutboxConfigurationException(prefix, e.getMessage(),
                    "change the " + prefix + ".* settings the message names (in kebab case)", e);
        }
    }
}
