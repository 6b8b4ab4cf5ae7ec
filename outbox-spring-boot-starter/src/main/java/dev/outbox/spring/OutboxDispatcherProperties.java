package dev.outbox.spring;

import dev.outbox.DispatcherConfig;
import org.springframework.util.unit.DataSize;

import java.time.Duration;

/** The dispatcher that harvests the outbox; see DispatcherConfig for what each setting does. */
public final class OutboxDispatcherProperties {
    /** Whether this instance runs a dispatcher; turn off on instances that only write messages. */
    private boolean enabled = true;
    /**
     * Whether instances elect one leader over Kafka. Turn off only when exactly one instance runs a
     * dispatcher for this outbox: it then always leads.
     */
    private boolean leaderElection = true;
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
    /** First wait after a failed store call or delivery; doubles on repeated failures. */
    private Duration ioErrorBackoff = Duration.ofMillis(500);
    /** Cap of the I/O error backoff. */
    private Duration maxIoErrorBackoff = Duration.ofSeconds(10);
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

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public boolean isLeaderElection() {
        return leaderElection;
    }

    public void setLeaderElection(boolean leaderElection) {
        this.leaderElection = leaderElection;
    }

    public String getName() {
        return name;
    }

    public void setName(String name) {
        this.name = name;
    }

    public int getMarkBatchSize() {
        return markBatchSize;
    }

    public void setMarkBatchSize(int markBatchSize) {
        this.markBatchSize = markBatchSize;
    }

    public int getMaxInFlightRecords() {
        return maxInFlightRecords;
    }

    public void setMaxInFlightRecords(int maxInFlightRecords) {
        this.maxInFlightRecords = maxInFlightRecords;
    }

    /** The bound in bytes, or null for the default (an eighth of the heap). */
    public DataSize getMaxInFlightBytes() {
        return maxInFlightBytes;
    }

    public void setMaxInFlightBytes(DataSize maxInFlightBytes) {
        this.maxInFlightBytes = maxInFlightBytes;
    }

    public int getPurgeBatchSize() {
        return purgeBatchSize;
    }

    public void setPurgeBatchSize(int purgeBatchSize) {
        this.purgeBatchSize = purgeBatchSize;
    }

    public Duration getPollInterval() {
        return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
        this.pollInterval = pollInterval;
    }

    public Duration getMarkBackoff() {
        return markBackoff;
    }

    public void setMarkBackoff(Duration markBackoff) {
        this.markBackoff = markBackoff;
    }

    public Duration getHeartbeatTimeout() {
        return heartbeatTimeout;
    }

    public void setHeartbeatTimeout(Duration heartbeatTimeout) {
        this.heartbeatTimeout = heartbeatTimeout;
    }

    public Duration getQueueTimeout() {
        return queueTimeout;
    }

    public void setQueueTimeout(Duration queueTimeout) {
        this.queueTimeout = queueTimeout;
    }

    public Duration getIoErrorBackoff() {
        return ioErrorBackoff;
    }

    public void setIoErrorBackoff(Duration ioErrorBackoff) {
        this.ioErrorBackoff = ioErrorBackoff;
    }

    public Duration getMaxIoErrorBackoff() {
        return maxIoErrorBackoff;
    }

    public void setMaxIoErrorBackoff(Duration maxIoErrorBackoff) {
        this.maxIoErrorBackoff = maxIoErrorBackoff;
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    public Duration getDrainTimeout() {
        return drainTimeout;
    }

    public void setDrainTimeout(Duration drainTimeout) {
        this.drainTimeout = drainTimeout;
    }

    public Duration getMetricsInterval() {
        return metricsInterval;
    }

    public void setMetricsInterval(Duration metricsInterval) {
        this.metricsInterval = metricsInterval;
    }

    public DispatcherConfig.Harvest getHarvest() {
        return harvest;
    }

    public void setHarvest(DispatcherConfig.Harvest harvest) {
        this.harvest = harvest;
    }

    public Duration getRescanInterval() {
        return rescanInterval;
    }

    public void setRescanInterval(Duration rescanInterval) {
        this.rescanInterval = rescanInterval;
    }

    public DispatcherConfig.AfterPark getAfterPark() {
        return afterPark;
    }

    public void setAfterPark(DispatcherConfig.AfterPark afterPark) {
        this.afterPark = afterPark;
    }

    /**
     * The {@link DispatcherConfig} of these settings.
     *
     * @param prefix the settings' property prefix, e.g. {@code outbox.dispatcher}: a bad value is reported as
     *               {@code <prefix>.<setting>}
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
        OutboxProperties.set(prefix + ".max-attempts", maxAttempts, b::maxAttempts);
        OutboxProperties.set(prefix + ".drain-timeout", drainTimeout, b::drainTimeout);
        OutboxProperties.set(prefix + ".metrics-interval", metricsInterval, b::metricsInterval);
        OutboxProperties.set(prefix + ".harvest", harvest, b::harvest);
        OutboxProperties.set(prefix + ".rescan-interval", rescanInterval, b::rescanInterval);
        OutboxProperties.set(prefix + ".after-park", afterPark, b::afterPark);
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new OutboxConfigurationException(prefix, e.getMessage(),
                    "change the " + prefix + ".* settings the message names (in kebab case)", e);
        }
    }
}
