package dev.outbox;

import java.time.Duration;
import java.util.Objects;

/**
 * The dispatcher's limits and timings. Immutable and thread-safe; built by {@link #builder()}, whose setters
 * reject a bad value naming it and whose {@link Builder#build()} rejects impossible combinations.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>markBatchSize</td><td>100</td><td>rows marked per mark query ({@link Harvest#MARK})</td></tr>
 *   <tr><td>readBatchSize</td><td>markBatchSize</td><td>{@link Harvest#CURSOR}: the least free room in flight worth
 *       a read, which then reads as many rows as there is room for</td></tr>
 *   <tr><td>maxInFlightRecords</td><td>1000</td><td>records sent but not yet acknowledged and purged</td></tr>
 *   <tr><td>maxInFlightBytes</td><td>an eighth of the heap ({@link #defaultMaxInFlightBytes()})</td><td>bytes
 *       (value + key + headers) of the records read and not yet acknowledged and purged; the leader stops reading
 *       when they reach it. A record larger than this is sent alone. See {@link Builder#maxInFlightBytes}</td></tr>
 *   <tr><td>purgeBatchSize</td><td>1000</td><td>most ids purged (or failures recorded) by one store call</td></tr>
 *   <tr><td>pollInterval</td><td>100 ms</td><td>leader-election poll and heartbeat interval; the longest
 *       wait between marks of an idle outbox</td></tr>
 *   <tr><td>markBackoff</td><td>10 ms</td><td>first wait after a mark found nothing; doubles up to
 *       pollInterval while the outbox stays empty</td></tr>
 *   <tr><td>heartbeatTimeout</td><td>5 s</td><td>a leader that sees none of its own heartbeats for this long
 *       fences itself</td></tr>
 *   <tr><td>queueTimeout</td><td>30 s</td><td>a send still unacknowledged after this long is reported as
 *       stuck (looked for every tenth of it, or every pollInterval if that is longer)</td></tr>
 *   <tr><td>ioErrorBackoff</td><td>500 ms</td><td>store writes' retry ({@link #storeRetry()}): first wait after a
 *       failed store call; doubles on repeated failures up to maxIoErrorBackoff</td></tr>
 *   <tr><td>maxIoErrorBackoff</td><td>10 s</td><td>cap of the store writes' backoff</td></tr>
 *   <tr><td>deliveryBackoff</td><td>ioErrorBackoff</td><td>deliveries' retry ({@link #deliveryRetry()}): the
 *       backoff before a failed record's first retry (per record, between half and all of it: jitter), and of a
 *       broker outage's shared retry; doubles per failure up to maxDeliveryBackoff</td></tr>
 *   <tr><td>maxDeliveryBackoff</td><td>maxIoErrorBackoff</td><td>cap of the deliveries' backoff</td></tr>
 *   <tr><td>maxAttempts</td><td>10</td><td>failed deliveries after which a record is parked</td></tr>
 *   <tr><td>drainTimeout</td><td>10 s</td><td>how long close() and a revocation wait for in-flight records
 *       to be acknowledged</td></tr>
 *   <tr><td>metricsInterval</td><td>5 s</td><td>period of {@link DispatcherListener#meterRead} events, and of
 *       the leader's samples of the outbox (backlog, parked rows, lag: {@link DispatcherObserver#sampled},
 *       {@link Dispatcher#health()})</td></tr>
 *   <tr><td>harvest</td><td>{@link Harvest#CURSOR CURSOR}</td><td>how the leader reads the outbox: by a cursor
 *       held in memory (rows are read, sent, and deleted once acknowledged) or by marking rows in the table
 *       ({@link Harvest#MARK MARK}, for stores without {@link dev.outbox.spi.CursorHarvest#read})</td></tr>
 *   <tr><td>rescanInterval</td><td>30 s</td><td>cursor harvest only: how often a leader that has caught up reads
 *       the table again from its head, a safety net for rows that appeared below the cursor after the store said
 *       none could (a sequence reset by hand, a writer transaction longer than the store's late-commit window)
 *       </td></tr>
 *   <tr><td>afterPark</td><td>{@link AfterPark#MOVE_ON MOVE_ON}</td><td>what happens to a key once one of its
 *       records is parked: its later records flow ({@link AfterPark#MOVE_ON MOVE_ON}) or wait until an operator
 *       replays or discards the parked rows ({@link AfterPark#HOLD_KEY HOLD_KEY})</td></tr>
 *   <tr><td>supersededParked</td><td>{@link SupersededParked#DISCARD DISCARD}</td><td>what happens to a parked
 *       latest-only record once a newer record of its topic and key is delivered: it is discarded from the parked
 *       area, so that no replay can send it after the newer one ({@link SupersededParked#DISCARD DISCARD}), or kept
 *       for an operator ({@link SupersededParked#KEEP KEEP})</td></tr>
 * </table>
 */
public final class DispatcherConfig {

    /** How the leader finds the rows to send. */
    public enum Harvest {
        /**
         * Read by cursor: the leader reads committed rows above a cursor it keeps in memory, in id order, and
         * deletes each row once the broker acknowledged it; nothing is written to a row on the way unless its
         * delivery fails. Ids a read passed without seeing (their writer had not committed) are read again until
         * the store says they cannot commit any more, so late commits are published, in key order. Needs a
         * store that {@linkplain dev.outbox.spi.CursorHarvest supports it}; the SQL stores do.
         */
        CURSOR,
        /**
         * Mark, publish, remove: the leader stamps its id on the oldest unmarked rows with one statement, sends
         * them, and deletes them once acknowledged (goharvest's algorithm). Every row is written once more than
         * by {@link #CURSOR}; works with any store.
         */
        MARK
    }

    /** What happens to a key once one of its records was parked. */
    public enum AfterPark {
        /**
         * The key moves on: its later records are sent as if the parked one had been delivered. Nothing waits for a
         * human; a consumer sees a gap in the key's sequence (and, if the parked record is replayed, receives it
         * after later ones). The default.
         */
        MOVE_ON,
        /**
         * The key is held: while the parked table holds a row of the key, none of the key's records is sent; every
         * other key flows. When an operator replays the parked rows ({@link dev.outbox.spi.ParkedRecords#replay}, which puts
         * them back ahead of the key's waiting rows) or discards them, the key's records are sent again, in order:
         * the replayed ones first. The hold is derived from the parked table, so a new leader keeps it. For
         * consumers that need a key's records strictly in order without gaps. Needs a store that
         * {@linkplain dev.outbox.spi.ParkedKeys supports it}.
         */
        HOLD_KEY
    }

    /**
     * What happens to a parked {@linkplain OutboxMessage#isLatestOnly() latest-only} record once a newer record of
     * its topic and key has been delivered (its key moved on, {@link AfterPark#MOVE_ON}): the parked value is then
     * worth nothing, and a replay would send it after the newer one.
     */
    public enum SupersededParked {
        /**
         * The leader discards the parked row as soon as the newer record is acknowledged, counted and told to the
         * observers ({@link DispatcherObserver#parkedSuperseded}), so a later replay finds nothing to send. The
         * default.
         */
        DISCARD,
        /**
         * The parked row stays for an operator; the leader logs at WARN that it was superseded. Replaying it sends the
         * old value after the newer one.
         */
        KEEP
    }

    private final int markBatchSize;
    private final int maxInFlightRecords;
    private final long maxInFlightBytes;
    private final int purgeBatchSize;
    private final Duration pollInterval;
    private final Duration markBackoff;
    private final Duration heartbeatTimeout;
    private final Duration queueTimeout;
    private final Duration ioErrorBackoff;
    private final Duration maxIoErrorBackoff;
    private final Duration deliveryBackoff;
    private final Duration maxDeliveryBackoff;
    private final int readBatchSize;
    private final int maxAttempts;
    private final Duration drainTimeout;
    private final Duration metricsInterval;
    private final Harvest harvest;
    private final Duration rescanInterval;
    private final AfterPark afterPark;
    private final SupersededParked supersededParked;

    private DispatcherConfig(Builder b) {
        this.markBatchSize = b.markBatchSize;
        this.maxInFlightRecords = b.maxInFlightRecords;
        this.maxInFlightBytes = b.maxInFlightBytes;
        this.purgeBatchSize = b.purgeBatchSize;
        this.pollInterval = b.pollInterval;
        this.markBackoff = b.markBackoff;
        this.heartbeatTimeout = b.heartbeatTimeout;
        this.queueTimeout = b.queueTimeout;
        this.ioErrorBackoff = b.ioErrorBackoff;
        this.maxIoErrorBackoff = b.maxIoErrorBackoff;
        this.deliveryBackoff = b.deliveryBackoff != null ? b.deliveryBackoff : b.ioErrorBackoff;
        this.maxDeliveryBackoff = b.maxDeliveryBackoff != null ? b.maxDeliveryBackoff : b.maxIoErrorBackoff;
        this.readBatchSize = b.readBatchSize > 0 ? b.readBatchSize : b.markBatchSize;
        this.maxAttempts = b.maxAttempts;
        this.harvest = b.harvest;
        this.rescanInterval = b.rescanInterval;
        this.afterPark = b.afterPark;
        this.supersededParked = b.supersededParked;
        this.drainTimeout = b.drainTimeout;
        this.metricsInterval = b.metricsInterval;
    }

    /**
     * The defaults listed in the class documentation.
     *
     * @return a configuration with every default; {@link #maxInFlightBytes()} depends on this JVM's heap
     */
    public static DispatcherConfig defaults() {
        return builder().build();
    }

    /**
     * Starts a builder with the defaults listed in the class documentation.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder starting from this configuration's values.
     *
     * @return a new builder; changing it does not change this configuration
     */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.markBatchSize = markBatchSize;
        b.maxInFlightRecords = maxInFlightRecords;
        b.maxInFlightBytes = maxInFlightBytes;
        b.purgeBatchSize = purgeBatchSize;
        b.pollInterval = pollInterval;
        b.markBackoff = markBackoff;
        b.heartbeatTimeout = heartbeatTimeout;
        b.queueTimeout = queueTimeout;
        b.ioErrorBackoff = ioErrorBackoff;
        b.maxIoErrorBackoff = maxIoErrorBackoff;
        b.deliveryBackoff = deliveryBackoff;
        b.maxDeliveryBackoff = maxDeliveryBackoff;
        b.readBatchSize = readBatchSize;
        b.maxAttempts = maxAttempts;
        b.drainTimeout = drainTimeout;
        b.metricsInterval = metricsInterval;
        b.harvest = harvest;
        b.rescanInterval = rescanInterval;
        b.afterPark = afterPark;
        b.supersededParked = supersededParked;
        return b;
    }

    /**
     * The most rows one mark query stamps ({@link Harvest#MARK}).
     *
     * @return the batch size in rows, at least 1 and at most {@link #maxInFlightRecords()}; default 100
     */
    public int markBatchSize() {
        return markBatchSize;
    }

    /**
     * The least free room in flight worth a cursor read; see the class documentation.
     *
     * @return rows, at least 1 and at most {@link #maxInFlightRecords()}; {@link #markBatchSize()} unless set
     */
    public int readBatchSize() {
        return readBatchSize;
    }

    /**
     * The most records read or marked and not yet acknowledged and purged.
     *
     * @return the bound in records, at least 1; default 1000
     */
    public int maxInFlightRecords() {
        return maxInFlightRecords;
    }

    /**
     * The most bytes of records read and not yet acknowledged; see {@link Builder#maxInFlightBytes}.
     *
     * @return bytes, at least 1 ({@link Long#MAX_VALUE}: no bound); default {@link #defaultMaxInFlightBytes()}
     */
    public long maxInFlightBytes() {
        return maxInFlightBytes;
    }

    /**
     * The default of {@link #maxInFlightBytes()}: an eighth of this JVM's maximum heap ({@link Runtime#maxMemory()}),
     * at least 1 MiB; 256 MiB if the JVM reports no maximum. An eighth because each byte in flight is held up to three
     * times at the peak of its journey (the record the store read, the JDBC driver's buffer while the read is decoded,
     * the broker client's serialized copy until it is acknowledged) and the application shares the heap: the outbox
     * then takes at most about three eighths of it, whatever the size of the messages.
     *
     * @return the default in bytes, at least 1 MiB
     */
    public static long defaultMaxInFlightBytes() {
        long heap = Runtime.getRuntime().maxMemory();
        if (heap == Long.MAX_VALUE) {
            return 256L << 20;
        }
        return Math.max(1L << 20, heap / 8);
    }

    /**
     * The most ids one store call purges (or records failures for).
     *
     * @return the batch size in ids, at least 1; default 1000
     */
    public int purgeBatchSize() {
        return purgeBatchSize;
    }

    /**
     * The leader-election poll and heartbeat interval, and the longest wait between harvests of an idle outbox.
     *
     * @return the interval, positive; default 100 ms
     */
    public Duration pollInterval() {
        return pollInterval;
    }

    /**
     * The first wait after a harvest found nothing; it doubles up to {@link #pollInterval()} while the outbox stays
     * empty.
     *
     * @return the backoff, positive and at most {@link #pollInterval()}; default 10 ms
     */
    public Duration markBackoff() {
        return markBackoff;
    }

    /**
     * How long a leader that sees none of its own heartbeats waits before it fences itself.
     *
     * @return the timeout, at least 3 x {@link #pollInterval()}; default 5 s
     */
    public Duration heartbeatTimeout() {
        return heartbeatTimeout;
    }

    /**
     * How long a send may stay unacknowledged before it is reported as stuck.
     *
     * @return the timeout, positive; default 30 s
     */
    public Duration queueTimeout() {
        return queueTimeout;
    }

    /**
     * The first wait after a failed store call ({@link #storeRetry()}); it doubles on repeated failures up to
     * {@link #maxIoErrorBackoff()}.
     *
     * @return the backoff, positive and at most {@link #maxIoErrorBackoff()}; default 500 ms
     */
    public Duration ioErrorBackoff() {
        return ioErrorBackoff;
    }

    /**
     * The cap of the store calls' backoff ({@link #storeRetry()}).
     *
     * @return the cap, positive; default 10 s
     */
    public Duration maxIoErrorBackoff() {
        return maxIoErrorBackoff;
    }

    /**
     * The backoff before a failed record's first retry; {@link #ioErrorBackoff()} unless set.
     *
     * @return the backoff, positive and at most {@link #maxDeliveryBackoff()}
     */
    public Duration deliveryBackoff() {
        return deliveryBackoff;
    }

    /**
     * The cap of the deliveries' backoff; {@link #maxIoErrorBackoff()} unless set.
     *
     * @return the cap, positive
     */
    public Duration maxDeliveryBackoff() {
        return maxDeliveryBackoff;
    }

    /**
     * How a failed store call (a read, a mark, a purge, a retry time or a park written) is retried: exponential from
     * {@link #ioErrorBackoff()} up to {@link #maxIoErrorBackoff()}.
     *
     * @return the policy as a value
     */
    public dev.outbox.spi.Backoff storeRetry() {
        return dev.outbox.spi.Backoff.exponential(ioErrorBackoff, maxIoErrorBackoff);
    }

    /**
     * How a failed delivery is retried: per record, exponential from {@link #deliveryBackoff()} up to
     * {@link #maxDeliveryBackoff()} by its attempt count, with jitter; in a broker outage, the same backoff shared by
     * every key.
     *
     * @return the policy as a value
     */
    public dev.outbox.spi.Backoff deliveryRetry() {
        return dev.outbox.spi.Backoff.exponential(deliveryBackoff, maxDeliveryBackoff);
    }

    /**
     * The failed deliveries after which a record is parked.
     *
     * @return the attempts, at least 1; default 10
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * How long {@code close()} and a revocation wait for in-flight records to be acknowledged.
     *
     * @return the timeout, positive; default 10 s
     */
    public Duration drainTimeout() {
        return drainTimeout;
    }

    /**
     * The period of {@link DispatcherListener#meterRead} events and of the leader's samples of the outbox (backlog,
     * parked rows, lag).
     *
     * @return the period, positive; default 5 s
     */
    public Duration metricsInterval() {
        return metricsInterval;
    }

    /**
     * How the leader finds the rows to send; see {@link Harvest}.
     *
     * @return the harvest; default {@link Harvest#CURSOR}
     */
    public Harvest harvest() {
        return harvest;
    }

    /**
     * How often a caught-up cursor harvest reads the table again from its head.
     *
     * @return the interval, positive; default 30 s
     */
    public Duration rescanInterval() {
        return rescanInterval;
    }

    /**
     * What happens to a key once one of its records was parked; see {@link AfterPark}.
     *
     * @return the policy; default {@link AfterPark#MOVE_ON}
     */
    public AfterPark afterPark() {
        return afterPark;
    }

    /**
     * What happens to a parked latest-only record once a newer record of its key was delivered; see
     * {@link SupersededParked}.
     *
     * @return the policy; default {@link SupersededParked#DISCARD}
     */
    public SupersededParked supersededParked() {
        return supersededParked;
    }

    @Override
    public String toString() {
        return "DispatcherConfig{markBatchSize=" + markBatchSize + ", maxInFlightRecords=" + maxInFlightRecords
                + ", maxInFlightBytes=" + maxInFlightBytes + ", purgeBatchSize=" + purgeBatchSize
                + ", pollInterval=" + pollInterval
                + ", markBackoff=" + markBackoff + ", heartbeatTimeout=" + heartbeatTimeout
                + ", queueTimeout=" + queueTimeout + ", ioErrorBackoff=" + ioErrorBackoff
                + ", maxIoErrorBackoff=" + maxIoErrorBackoff + ", deliveryBackoff=" + deliveryBackoff
                + ", maxDeliveryBackoff=" + maxDeliveryBackoff + ", readBatchSize=" + readBatchSize
                + ", maxAttempts=" + maxAttempts
                + ", drainTimeout=" + drainTimeout + ", metricsInterval=" + metricsInterval + ", harvest=" + harvest
                + ", rescanInterval=" + rescanInterval + ", afterPark=" + afterPark
                + ", supersededParked=" + supersededParked + '}';
    }

    /** Builds a {@link DispatcherConfig}; not thread-safe. */
    public static final class Builder {
        private int markBatchSize = 100;
        private int maxInFlightRecords = 1000;
        private long maxInFlightBytes = defaultMaxInFlightBytes();
        private int purgeBatchSize = 1000;
        private Duration pollInterval = Duration.ofMillis(100);
        private Duration markBackoff = Duration.ofMillis(10);
        private Duration heartbeatTimeout = Duration.ofSeconds(5);
        private Duration queueTimeout = Duration.ofSeconds(30);
        private Duration ioErrorBackoff = Duration.ofMillis(500);
        private Duration maxIoErrorBackoff = Duration.ofSeconds(10);
        /** Null: as {@link #ioErrorBackoff}. */
        private Duration deliveryBackoff;
        /** Null: as {@link #maxIoErrorBackoff}. */
        private Duration maxDeliveryBackoff;
        /** 0: as {@link #markBatchSize}. */
        private int readBatchSize;
        private int maxAttempts = 10;
        private Duration drainTimeout = Duration.ofSeconds(10);
        private Duration metricsInterval = Duration.ofSeconds(5);
        private Harvest harvest = Harvest.CURSOR;
        private Duration rescanInterval = Duration.ofSeconds(30);
        private AfterPark afterPark = AfterPark.MOVE_ON;
        private SupersededParked supersededParked = SupersededParked.DISCARD;

        private Builder() {
        }

        /**
         * The most rows one mark query stamps ({@link Harvest#MARK}). Default 100. {@link #build()} rejects more than
         * {@code maxInFlightRecords}.
         *
         * @param value rows, at least 1
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is below 1
         */
        public Builder markBatchSize(int value) {
            this.markBatchSize = positive("markBatchSize", value);
            return this;
        }

        /**
         * The most records read or marked and not yet acknowledged and purged. Default 1000. {@link #build()} rejects
         * less than {@code markBatchSize} or {@code readBatchSize}.
         *
         * @param value records, at least 1
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is below 1
         */
        public Builder maxInFlightRecords(int value) {
            this.maxInFlightRecords = positive("maxInFlightRecords", value);
            return this;
        }

        /**
         * The most bytes of records read and not yet acknowledged and purged, queued behind their keys or in flight.
         * A record's size is that of its value, key and headers. The leader reads no more rows once they reach this
         * bound, and asks a read for no more rows than fit below it at the mean size of the rows it read last (one
         * row when it has read none yet). A record larger than the bound is read and sent alone, so nothing stalls.
         * The store cannot know the sizes of rows before it reads them: if rows suddenly grow far larger than those
         * read before, one read can overshoot the bound by what they exceed that mean (at most
         * {@code maxInFlightRecords} rows); reading then waits until the bytes fall below the bound.
         * Default: {@link DispatcherConfig#defaultMaxInFlightBytes()}, an eighth of the heap.
         *
         * @param value bytes, at least 1; {@link Long#MAX_VALUE} turns the bound off
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is below 1
         */
        public Builder maxInFlightBytes(long value) {
            if (value < 1) {
                throw new IllegalArgumentException("maxInFlightBytes must be at least 1 byte, was " + value);
            }
            this.maxInFlightBytes = value;
            return this;
        }

        /**
         * The most ids one store call purges (or records failures for). Default 1000.
         *
         * @param value ids, at least 1
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is below 1
         */
        public Builder purgeBatchSize(int value) {
            this.purgeBatchSize = positive("purgeBatchSize", value);
            return this;
        }

        /**
         * The leader-election poll and heartbeat interval, and the longest wait between harvests of an idle outbox.
         * Default 100 ms. {@link #build()} rejects a {@code markBackoff} above it or a {@code heartbeatTimeout} below 3
         * times it.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder pollInterval(Duration value) {
            this.pollInterval = positive("pollInterval", value);
            return this;
        }

        /**
         * The first wait after a harvest found nothing; it doubles up to {@code pollInterval} while the outbox stays
         * empty. Default 10 ms. {@link #build()} rejects more than {@code pollInterval}.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder markBackoff(Duration value) {
            this.markBackoff = positive("markBackoff", value);
            return this;
        }

        /**
         * How long a leader that sees none of its own heartbeats waits before it fences itself. Default 5 s.
         * {@link #build()} rejects less than 3 x {@code pollInterval}.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder heartbeatTimeout(Duration value) {
            this.heartbeatTimeout = positive("heartbeatTimeout", value);
            return this;
        }

        /**
         * How long a send may stay unacknowledged before it is reported as stuck. Default 30 s.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder queueTimeout(Duration value) {
            this.queueTimeout = positive("queueTimeout", value);
            return this;
        }

        /**
         * The first wait after a failed store call ({@link DispatcherConfig#storeRetry()}); it doubles on repeated
         * failures up to {@code maxIoErrorBackoff}. Default 500 ms. {@link #build()} rejects more than
         * {@code maxIoErrorBackoff}.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder ioErrorBackoff(Duration value) {
            this.ioErrorBackoff = positive("ioErrorBackoff", value);
            return this;
        }

        /**
         * The cap of the store calls' backoff ({@link DispatcherConfig#storeRetry()}). Default 10 s.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder maxIoErrorBackoff(Duration value) {
            this.maxIoErrorBackoff = positive("maxIoErrorBackoff", value);
            return this;
        }

        /**
         * The least free room in flight worth a cursor read ({@link Harvest#CURSOR}); default: the
         * {@code markBatchSize}.
         *
         * @param value rows, at least 1 and at most {@code maxInFlightRecords}
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is below 1
         */
        public Builder readBatchSize(int value) {
            this.readBatchSize = positive("readBatchSize", value);
            return this;
        }

        /**
         * The backoff before a failed record's first retry, doubling per failure of the record up to
         * {@code maxDeliveryBackoff} (and of a broker outage's shared retry); default: the {@code ioErrorBackoff}.
         *
         * @param value a positive duration
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder deliveryBackoff(Duration value) {
            this.deliveryBackoff = positive("deliveryBackoff", value);
            return this;
        }

        /**
         * The cap of the deliveries' backoff; default: the {@code maxIoErrorBackoff}.
         *
         * @param value a positive duration, at least the delivery backoff
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder maxDeliveryBackoff(Duration value) {
            this.maxDeliveryBackoff = positive("maxDeliveryBackoff", value);
            return this;
        }

        /**
         * The failed deliveries after which a record is parked. Default 10.
         *
         * @param value attempts, at least 1
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is below 1
         */
        public Builder maxAttempts(int value) {
            this.maxAttempts = positive("maxAttempts", value);
            return this;
        }

        /**
         * How long {@code close()} and a revocation wait for in-flight records to be acknowledged. Default 10 s.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder drainTimeout(Duration value) {
            this.drainTimeout = positive("drainTimeout", value);
            return this;
        }

        /**
         * The period of {@link DispatcherListener#meterRead} events and of the leader's samples of the outbox (backlog,
         * parked rows, lag). Default 5 s.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder metricsInterval(Duration value) {
            this.metricsInterval = positive("metricsInterval", value);
            return this;
        }

        /**
         * How the leader finds the rows to send; default {@link Harvest#CURSOR}.
         *
         * @param value the harvest; not null
         * @return this builder
         * @throws NullPointerException if {@code value} is null
         */
        public Builder harvest(Harvest value) {
            this.harvest = Objects.requireNonNull(value, "harvest");
            return this;
        }

        /**
         * How often a caught-up cursor harvest reads the table again from its head; default 30 s.
         *
         * @param value a positive duration; not null
         * @return this builder
         * @throws NullPointerException     if {@code value} is null
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder rescanInterval(Duration value) {
            this.rescanInterval = positive("rescanInterval", value);
            return this;
        }

        /**
         * What happens to a key once one of its records was parked; default {@link AfterPark#MOVE_ON}.
         *
         * @param value the policy; not null
         * @return this builder
         * @throws NullPointerException if {@code value} is null
         */
        public Builder afterPark(AfterPark value) {
            this.afterPark = Objects.requireNonNull(value, "afterPark");
            return this;
        }

        /**
         * What happens to a parked latest-only record once a newer record of its topic and key was delivered;
         * default {@link SupersededParked#DISCARD}.
         *
         * @param value the policy; not null
         * @return this builder
         * @throws NullPointerException if {@code value} is null
         */
        public Builder supersededParked(SupersededParked value) {
            this.supersededParked = Objects.requireNonNull(value, "supersededParked");
            return this;
        }

        /**
         * The configuration as set so far; the builder can go on being used.
         *
         * @return a new, immutable configuration
         * @throws IllegalArgumentException if settings contradict each other, saying which and why: markBatchSize
         *                                  or readBatchSize above maxInFlightRecords, markBackoff above
         *                                  pollInterval, heartbeatTimeout below 3 x pollInterval, ioErrorBackoff
         *                                  above maxIoErrorBackoff, deliveryBackoff above maxDeliveryBackoff
         */
        public DispatcherConfig build() {
            if (markBatchSize > maxInFlightRecords) {
                throw new IllegalArgumentException("markBatchSize (" + markBatchSize
                        + ") must not exceed maxInFlightRecords (" + maxInFlightRecords + ")");
            }
            if (markBackoff.compareTo(pollInterval) > 0) {
                throw new IllegalArgumentException("markBackoff (" + markBackoff
                        + ") must not exceed pollInterval (" + pollInterval + ")");
            }
            if (heartbeatTimeout.compareTo(pollInterval.multipliedBy(3)) < 0) {
                throw new IllegalArgumentException("heartbeatTimeout (" + heartbeatTimeout
                        + ") must be at least 3 x pollInterval (" + pollInterval
                        + "): heartbeats are sent once per poll interval, and a leader must see several"
                        + " before it could be fenced by one late heartbeat");
            }
            if (ioErrorBackoff.compareTo(maxIoErrorBackoff) > 0) {
                throw new IllegalArgumentException("ioErrorBackoff (" + ioErrorBackoff
                        + ") must not exceed maxIoErrorBackoff (" + maxIoErrorBackoff + ")");
            }
            Duration delivery = deliveryBackoff != null ? deliveryBackoff : ioErrorBackoff;
            Duration maxDelivery = maxDeliveryBackoff != null ? maxDeliveryBackoff : maxIoErrorBackoff;
            if (delivery.compareTo(maxDelivery) > 0) {
                throw new IllegalArgumentException("deliveryBackoff (" + delivery
                        + ") must not exceed maxDeliveryBackoff (" + maxDelivery + ")");
            }
            if (readBatchSize > maxInFlightRecords) {
                throw new IllegalArgumentException("readBatchSize (" + readBatchSize
                        + ") must not exceed maxInFlightRecords (" + maxInFlightRecords + ")");
            }
            return new DispatcherConfig(this);
        }

        private static int positive(String name, int value) {
            if (value < 1) {
                throw new IllegalArgumentException(name + " must be at least 1, was " + value);
            }
            return value;
        }

        private static Duration positive(String name, Duration value) {
            Objects.requireNonNull(value, name);
            if (value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, was " + value);
            }
            return value;
        }
    }
}
