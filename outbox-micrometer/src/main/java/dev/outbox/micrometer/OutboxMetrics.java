package dev.outbox.micrometer;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxSample;
import dev.outbox.ParkedRecord;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * Micrometer meters for one {@link Dispatcher}: what it sent, acknowledged, failed and parked, what is in flight,
 * the backlog and the parked rows, whether it leads, the lag of the outbox, the commit-to-acknowledgement latency
 * and the durations of its marks and purges.
 *
 * <pre>{@code
 * Dispatcher dispatcher = Dispatcher.builder(store, broker).build();
 * new OutboxMetrics(dispatcher, "outbox").bindTo(registry);   // "outbox": the outbox table, the `outbox` tag
 * dispatcher.start();
 * }</pre>
 *
 * <table>
 *   <caption>Meters (Prometheus names in brackets)</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>meaning</th></tr>
 *   <tr><td>outbox.records.sent [outbox_records_sent_total]</td><td>counter</td><td>outbox, topic</td>
 *       <td>records handed to the broker</td></tr>
 *   <tr><td>outbox.records.acknowledged [outbox_records_acknowledged_total]</td><td>counter</td>
 *       <td>outbox, topic</td><td>records acknowledged by the broker and purged</td></tr>
 *   <tr><td>outbox.records.failed [outbox_records_failed_total]</td><td>counter</td><td>outbox, topic</td>
 *       <td>failed deliveries (each retried, or parked)</td></tr>
 *   <tr><td>outbox.records.parked [outbox_records_parked_total]</td><td>counter</td><td>outbox, topic</td>
 *       <td>records parked by this dispatcher</td></tr>
 *   <tr><td>outbox.records.superseded [outbox_records_superseded_total]</td><td>counter</td><td>outbox, topic</td>
 *       <td>latest-only records not sent: a newer record of their topic and key was queued behind them, or was
 *       delivered while they were parked (then discarded from the parked area)</td></tr>
 *   <tr><td>outbox.records.in.flight [outbox_records_in_flight]</td><td>gauge</td><td>outbox</td>
 *       <td>records sent and not yet completed</td></tr>
 *   <tr><td>outbox.records.held [outbox_records_held]</td><td>gauge</td><td>outbox</td><td>records held because
 *       the store refused their purge, park or failure record for good: zero normally</td></tr>
 *   <tr><td>outbox.keys.held [outbox_keys_held]</td><td>gauge</td><td>outbox</td><td>keys held after a park
 *       (afterPark HOLD_KEY) until their parked rows are replayed or discarded</td></tr>
 *   <tr><td>outbox.backlog [outbox_backlog]</td><td>gauge</td><td>outbox</td><td>rows waiting in the outbox, as
 *       last sampled by the leader (NaN on a standby)</td></tr>
 *   <tr><td>outbox.parked [outbox_parked]</td><td>gauge</td><td>outbox</td><td>rows in the parked area, as last
 *       sampled by the leader (NaN on a standby)</td></tr>
 *   <tr><td>outbox.retained [outbox_retained_bytes]</td><td>gauge</td><td>outbox</td><td>write-ahead log the
 *       outbox's replication slot holds back, as last sampled by the leader (WAL harvest only; NaN otherwise): an
 *       abandoned or stuck slot fills the disk</td></tr>
 *   <tr><td>outbox.leader [outbox_leader]</td><td>gauge</td><td>outbox</td><td>1 while this instance leads, else
 *       0</td></tr>
 *   <tr><td>outbox.lag [outbox_lag_seconds]</td><td>time gauge</td><td>outbox</td><td>age of the oldest
 *       unpublished row, as last sampled by the leader, by the database's clock where the store has one (NaN on a
 *       standby); the one to alert on: it grows while a row is not published and the database is up</td></tr>
 *   <tr><td>outbox.read.age [outbox_read_age_seconds]</td><td>time gauge</td><td>outbox</td><td>time since the
 *       leader's harvest last read the store successfully (NaN on a standby): small while it works, growing while
 *       the database is down (when the lag, sampled from the database, stands still)</td></tr>
 *   <tr><td>outbox.ack.latency [outbox_ack_latency_seconds]</td><td>timer, percentile histogram</td>
 *       <td>outbox</td><td>from the row's creation (its transaction) to the broker's acknowledgement</td></tr>
 *   <tr><td>outbox.send.duration [outbox_send_duration_seconds]</td><td>timer (count, sum, max)</td>
 *       <td>outbox</td><td>from the hand-over to the broker to its acknowledgement</td></tr>
 *   <tr><td>outbox.mark.duration [outbox_mark_duration_seconds]</td><td>timer, percentile histogram</td>
 *       <td>outbox</td><td>duration of each mark query</td></tr>
 *   <tr><td>outbox.purge.duration [outbox_purge_duration_seconds]</td><td>timer, percentile histogram</td>
 *       <td>outbox</td><td>duration of each purge of acknowledged rows</td></tr>
 *   <tr><td>outbox.mark.size [outbox_mark_size_records]</td><td>distribution summary</td><td>outbox</td>
 *       <td>rows per mark</td></tr>
 *   <tr><td>outbox.purge.size [outbox_purge_size_records]</td><td>distribution summary</td><td>outbox</td>
 *       <td>rows per purge</td></tr>
 *   <tr><td>outbox.callback.errors [outbox_callback_errors_total]</td><td>function counter</td><td>outbox</td>
 *       <td>exceptions thrown by listener and observer callbacks (ignored by the dispatcher)</td></tr>
 * </table>
 *
 * <p>A sharded outbox ({@link Dispatcher#shardHealth()} lists more than one shard) also gets, per shard and tagged
 * {@code shard}: {@code outbox.shard.leader} (1 while this instance leads the shard), {@code outbox.shard.backlog}
 * and {@code outbox.shard.lag} (as last sampled by the shard's leader on this instance; NaN where another instance
 * leads it, whose own meters report it). The outbox-wide backlog and lag then cover the shards led here.
 *
 * <p>Tags: {@code outbox}, the name given to the constructor (use the outbox table's name), plus any common
 * tags given; the record counters also carry {@code topic}, bounded: the first {@value #MAX_TOPIC_TAGS} topics
 * seen get their own value, later ones share {@value #OTHER_TOPIC}. The key is never a tag.
 *
 * <p>The gauges read figures the dispatcher keeps up to date ({@link Dispatcher#health()}); a scrape never runs a
 * query. The backlog, parked and lag figures come from the sample the leader takes every
 * {@code metricsInterval}.
 *
 * <p>Thread-safe. {@link #bindTo} may be called for several registries; {@link #close()} stops recording into
 * all of them (the meters stay registered).
 */
public final class OutboxMetrics implements MeterBinder, AutoCloseable {
    /** Counter, tags outbox and topic: records handed to the broker. */
    public static final String RECORDS_SENT = "outbox.records.sent";
    /** Counter, tags outbox and topic: records the broker acknowledged (and the dispatcher purged). */
    public static final String RECORDS_ACKNOWLEDGED = "outbox.records.acknowledged";
    /** Counter, tags outbox and topic: failed deliveries, each then retried or parked. */
    public static final String RECORDS_FAILED = "outbox.records.failed";
    /** Counter, tags outbox and topic: records this dispatcher parked. */
    public static final String RECORDS_PARKED = "outbox.records.parked";
    /** Counter, tags outbox and topic: latest-only records purged without a send, a newer one of their key queued. */
    public static final String RECORDS_SUPERSEDED = "outbox.records.superseded";
    /** Gauge: records sent to the broker and not yet completed ({@link Dispatcher#inFlightRecords()}). */
    public static final String RECORDS_IN_FLIGHT = "outbox.records.in.flight";
    /**
     * Gauge: records held because the store refused their purge, park or failure record for good
     * ({@code health().heldRecords()}); zero normally, so alert when it is not.
     */
    public static final String RECORDS_HELD = "outbox.records.held";
    /** Gauge: keys held after a park ({@code DispatcherConfig.AfterPark.HOLD_KEY}); {@code health().heldKeys()}. */
    public static final String KEYS_HELD = "outbox.keys.held";
    /** Gauge: rows waiting in the outbox, as last sampled by the leader; NaN on a standby. */
    public static final String BACKLOG = "outbox.backlog";
    /** Gauge: rows in the parked area, as last sampled by the leader; NaN on a standby. */
    public static final String PARKED = "outbox.parked";
    /** Gauge: bytes the database keeps for the harvest (a replication slot's write-ahead log); WAL harvest only. */
    public static final String RETAINED = "outbox.retained";
    /** Gauge: 1 while this instance leads the outbox, else 0. */
    public static final String LEADER = "outbox.leader";
    /** Time gauge, in seconds: the age of the oldest unpublished row, as last sampled by the leader; NaN elsewhere. */
    public static final String LAG = "outbox.lag";
    /**
     * Time gauge, in seconds: the time since the leader's harvest last read the store successfully
     * ({@code health().sinceLastRead()}); NaN elsewhere. It grows while the database is down.
     */
    public static final String READ_AGE = "outbox.read.age";
    /** Timer with a percentile histogram: from a row's creation (its transaction) to the broker's acknowledgement. */
    public static final String ACK_LATENCY = "outbox.ack.latency";
    /** Timer (count, sum and max; no histogram): from the hand-over to the broker to its acknowledgement. */
    public static final String SEND_DURATION = "outbox.send.duration";
    /** Timer with a percentile histogram: the duration of each mark query. */
    public static final String MARK_DURATION = "outbox.mark.duration";
    /** Timer with a percentile histogram: the duration of each purge of acknowledged rows. */
    public static final String PURGE_DURATION = "outbox.purge.duration";
    /** Distribution summary, base unit records: the rows each mark query marked. */
    public static final String MARK_SIZE = "outbox.mark.size";
    /** Distribution summary, base unit records: the rows each purge removed. */
    public static final String PURGE_SIZE = "outbox.purge.size";
    /** Function counter: exceptions thrown by listener and observer callbacks, which the dispatcher ignores. */
    public static final String CALLBACK_ERRORS = "outbox.callback.errors";
    /** Gauge, sharded outboxes only: 1 while this instance leads the shard, else 0. */
    public static final String SHARD_LEADER = "outbox.shard.leader";
    /** Gauge, sharded outboxes only: the shard's rows waiting, as last sampled by its leader here (NaN elsewhere). */
    public static final String SHARD_BACKLOG = "outbox.shard.backlog";
    /** Time gauge, sharded outboxes only: the age of the shard's oldest row, sampled by its leader here. */
    public static final String SHARD_LAG = "outbox.shard.lag";

    /** Every meter name this binder registers for any outbox; see {@link #SHARD_METER_NAMES} for a sharded one. */
    public static final Set<String> METER_NAMES = Set.of(RECORDS_SENT, RECORDS_ACKNOWLEDGED, RECORDS_FAILED,
            RECORDS_PARKED, RECORDS_SUPERSEDED, RECORDS_IN_FLIGHT, RECORDS_HELD, KEYS_HELD, BACKLOG, PARKED, LEADER, LAG, ACK_LATENCY,
            SEND_DURATION, MARK_DURATION, PURGE_DURATION, MARK_SIZE, PURGE_SIZE, CALLBACK_ERRORS, RETAINED, READ_AGE);

    /** The meter names this binder registers in addition for a sharded outbox, once per shard. */
    public static final Set<String> SHARD_METER_NAMES = Set.of(SHARD_LEADER, SHARD_BACKLOG, SHARD_LAG);

    /** The tag naming the shard, on the shard gauges (bounded: an outbox has at most 256 shards). */
    public static final String SHARD_TAG = "shard";

    /** The tag naming the outbox. */
    public static final String OUTBOX_TAG = "outbox";
    /** The tag naming the topic, on the record counters. */
    public static final String TOPIC_TAG = "topic";
    /** Most distinct topic tag values per registry; later topics share {@value #OTHER_TOPIC}. */
    public static final int MAX_TOPIC_TAGS = 100;
    /** The topic tag value of topics beyond the first {@value #MAX_TOPIC_TAGS}. */
    public static final String OTHER_TOPIC = "_other";

    private final Dispatcher dispatcher;
    private final Tags tags;
    private final List<RegistryObserver> observers = new CopyOnWriteArrayList<>();

    /**
     * Meters for {@code dispatcher}, tagged {@code outbox=<outbox>}.
     *
     * @param dispatcher the dispatcher to observe; not {@code null}. It may be started before or after
     *                   {@link #bindTo}: the gauges read its health, and events count from the binding on.
     * @param outbox     the outbox's name, usually its table's name; not {@code null} or blank
     * @throws NullPointerException     if {@code dispatcher} is {@code null}
     * @throws IllegalArgumentException if {@code outbox} is {@code null} or blank
     */
    public OutboxMetrics(Dispatcher dispatcher, String outbox) {
        this(dispatcher, outbox, Tags.empty());
    }

    /**
     * Meters for {@code dispatcher}, tagged {@code outbox=<outbox>} and with {@code tags} (for example the
     * application's name) on every meter.
     *
     * @param dispatcher the dispatcher to observe; not {@code null}. It may be started before or after
     *                   {@link #bindTo}: the gauges read its health, and events count from the binding on.
     * @param outbox     the outbox's name, usually its table's name; not {@code null} or blank
     * @param tags       common tags added to every meter, copied at once; not {@code null}, may be empty. Keep
     *                   their values bounded (a tag per instance or per key multiplies the series). A tag named
     *                   {@value #OUTBOX_TAG} is replaced by {@code outbox}.
     * @throws NullPointerException     if {@code dispatcher} or {@code tags} is {@code null}
     * @throws IllegalArgumentException if {@code outbox} is {@code null} or blank
     */
    public OutboxMetrics(Dispatcher dispatcher, String outbox, Iterable<Tag> tags) {
        this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher must not be null");
        if (outbox == null || outbox.isBlank()) {
            throw new IllegalArgumentException("outbox must not be blank: '" + outbox + "'");
        }
        Objects.requireNonNull(tags, "tags must not be null");
        this.tags = Tags.of(tags).and(OUTBOX_TAG, outbox);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry must not be null");
        Dispatcher d = dispatcher;
        Gauge.builder(RECORDS_IN_FLIGHT, d, Dispatcher::inFlightRecords).tags(tags).strongReference(true)
                .description("Records sent to the broker and not yet completed").register(registry);
        Gauge.builder(RECORDS_HELD, d, x -> x.health().heldRecords()).tags(tags).strongReference(true)
                .description("Records held because the store refused their purge, park or failure record for good")
                .register(registry);
        Gauge.builder(KEYS_HELD, d, x -> x.health().heldKeys()).tags(tags).strongReference(true)
                .description("Keys held after a park (afterPark HOLD_KEY) until their parked rows are replayed or"
                        + " discarded").register(registry);
        Gauge.builder(LEADER, d, x -> x.isLeader() ? 1 : 0).tags(tags).strongReference(true)
                .description("1 while this instance leads the outbox, else 0").register(registry);
        Gauge.builder(BACKLOG, d, sampled(OutboxSample::backlog)).tags(tags).strongReference(true)
                .description("Rows waiting in the outbox, as last sampled by the leader").register(registry);
        Gauge.builder(PARKED, d, sampled(OutboxSample::parked)).tags(tags).strongReference(true)
                .description("Rows in the parked area, as last sampled by the leader").register(registry);
        Gauge.builder(RETAINED, d, sampled(x -> x.retainedBytes() < 0 ? Double.NaN : x.retainedBytes()))
                .tags(tags).baseUnit("bytes").strongReference(true)
                .description("Bytes of write-ahead log the outbox's replication slot holds back (WAL harvest), as last"
                        + " sampled by the leader").register(registry);
        TimeGauge.builder(LAG, d, TimeUnit.SECONDS, OutboxMetrics::lagSeconds).tags(tags).strongReference(true)
                .description("Age of the oldest unpublished row, as last sampled by the leader")
                .register(registry);
        TimeGauge.builder(READ_AGE, d, TimeUnit.SECONDS, x -> x.health().sinceLastRead()
                        .map(age -> age.toNanos() / 1e9).orElse(Double.NaN)).tags(tags).strongReference(true)
                .description("Time since the leader's harvest last read the store successfully").register(registry);
        FunctionCounter.builder(CALLBACK_ERRORS, d, x -> x.health().callbackErrors()).tags(tags)
                .description("Exceptions thrown by dispatcher listener and observer callbacks").register(registry);
        int shards = d.shardHealth().size();
        if (shards > 1) {
            for (int i = 0; i < shards; i++) {
                int shard = i;
                Tags shardTags = tags.and(SHARD_TAG, String.valueOf(i));
                Gauge.builder(SHARD_LEADER, d, x -> shardHealth(x, shard).status() == DispatcherHealth.Status.LEADER
                                ? 1 : 0).tags(shardTags).strongReference(true)
                        .description("1 while this instance leads the shard, else 0").register(registry);
                Gauge.builder(SHARD_BACKLOG, d, x -> shardHealth(x, shard).lastSample()
                                .map(OutboxSample::backlog).map(Long::doubleValue).orElse(Double.NaN))
                        .tags(shardTags).strongReference(true)
                        .description("Rows waiting in the shard, as last sampled by its leader on this instance")
                        .register(registry);
                TimeGauge.builder(SHARD_LAG, d, TimeUnit.SECONDS, x -> shardHealth(x, shard).lag()
                                .map(lag -> lag.toNanos() / 1e9).orElse(Double.NaN))
                        .tags(shardTags).strongReference(true)
                        .description("Age of the shard's oldest row, as last sampled by its leader on this instance")
                        .register(registry);
            }
        }
        RegistryObserver observer = new RegistryObserver(registry, tags);
        observers.add(observer);
        dispatcher.addObserver(observer);
    }

    /** Stops recording: unregisters this binder's observers from the dispatcher. Idempotent. */
    @Override
    public void close() {
        for (RegistryObserver o : observers) {
            dispatcher.removeObserver(o);
        }
        observers.clear();
    }

    private static ToDoubleFunction<Dispatcher> sampled(ToDoubleFunction<OutboxSample> figure) {
        return d -> {
            Optional<OutboxSample> s = d.health().lastSample();
            return s.isPresent() ? figure.applyAsDouble(s.get()) : Double.NaN;
        };
    }

    private static DispatcherHealth shardHealth(Dispatcher d, int shard) {
        return d.shardHealth().get(shard);
    }

    private static double lagSeconds(Dispatcher d) {
        DispatcherHealth h = d.health();
        return h.lag().map(lag -> lag.toNanos() / 1e9).orElse(Double.NaN);
    }

    @Override
    public String toString() {
        return "OutboxMetrics" + tags;
    }

    /** Records the dispatcher's events into one registry. Thread-safe. */
    private static final class RegistryObserver implements DispatcherObserver {
        private final MeterRegistry registry;
        private final Tags tags;
        private final Map<String, TopicCounters> topics = new ConcurrentHashMap<>();
        private final Timer ackLatency;
        private final Timer sendDuration;
        private final Timer markDuration;
        private final Timer purgeDuration;
        private final DistributionSummary markSize;
        private final DistributionSummary purgeSize;

        RegistryObserver(MeterRegistry registry, Tags tags) {
            this.registry = registry;
            this.tags = tags;
            this.ackLatency = timer(ACK_LATENCY, "From a row's creation to the broker's acknowledgement",
                    Duration.ofMillis(1), Duration.ofMinutes(10));
            // No histogram here: one per record is enough (commit to ack); this one gives mean and max.
            this.sendDuration = Timer.builder(SEND_DURATION).tags(tags)
                    .description("From the hand-over to the broker to its acknowledgement").register(registry);
            this.markDuration = timer(MARK_DURATION, "Duration of each mark query",
                    Duration.ofMillis(1), Duration.ofMinutes(1));
            this.purgeDuration = timer(PURGE_DURATION, "Duration of each purge of acknowledged rows",
                    Duration.ofMillis(1), Duration.ofMinutes(1));
            this.markSize = DistributionSummary.builder(MARK_SIZE).baseUnit("records").tags(tags)
                    .description("Rows per mark").register(registry);
            this.purgeSize = DistributionSummary.builder(PURGE_SIZE).baseUnit("records").tags(tags)
                    .description("Rows per purge").register(registry);
            topic(OTHER_TOPIC); // registered up front, so that dashboards never miss the series
        }

        private Timer timer(String name, String description, Duration min, Duration max) {
            return Timer.builder(name).tags(tags).description(description).publishPercentileHistogram()
                    .minimumExpectedValue(min).maximumExpectedValue(max).register(registry);
        }

        private TopicCounters topic(String topic) {
            TopicCounters c = topics.get(topic);
            if (c != null) {
                return c;
            }
            if (topics.size() >= MAX_TOPIC_TAGS + 1) { // + 1: the "_other" entry
                return topics.get(OTHER_TOPIC);
            }
            return topics.computeIfAbsent(topic, t -> new TopicCounters(registry, tags.and(TOPIC_TAG, t)));
        }

        @Override
        public void marked(int rows, Duration duration) {
            markDuration.record(duration);
            markSize.record(rows);
        }

        @Override
        public void purged(int rows, Duration duration) {
            purgeDuration.record(duration);
            purgeSize.record(rows);
        }

        @Override
        public void sent(OutboxRecord record) {
            topic(record.topic()).sent.increment();
        }

        @Override
        public void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
            topic(record.topic()).acknowledged.increment();
            sendDuration.record(sendToAck);
            ackLatency.record(commitToAck);
        }

        @Override
        public void failed(OutboxRecord record, Throwable error) {
            topic(record.topic()).failed.increment();
        }

        @Override
        public void parked(ParkedRecord record) {
            topic(record.topic() == null ? OTHER_TOPIC : record.topic()).parked.increment();
        }

        @Override
        public void superseded(OutboxRecord record, long newerId) {
            topic(record.topic()).superseded.increment();
        }

        @Override
        public void parkedSuperseded(ParkedRecord record, long newerId) {
            topic(record.topic() == null ? OTHER_TOPIC : record.topic()).superseded.increment();
        }
    }

    /** The record counters of one topic. */
    private static final class TopicCounters {
        final Counter sent;
        final Counter acknowledged;
        final Counter failed;
        final Counter parked;
        final Counter superseded;

        TopicCounters(MeterRegistry registry, Tags tags) {
            sent = Counter.builder(RECORDS_SENT).tags(tags)
                    .description("Records handed to the broker").register(registry);
            acknowledged = Counter.builder(RECORDS_ACKNOWLEDGED).tags(tags)
                    .description("Records acknowledged by the broker and purged").register(registry);
            failed = Counter.builder(RECORDS_FAILED).tags(tags)
                    .description("Failed deliveries, each retried or parked").register(registry);
            parked = Counter.builder(RECORDS_PARKED).tags(tags)
                    .description("Records parked by this dispatcher").register(registry);
            superseded = Counter.builder(RECORDS_SUPERSEDED).tags(tags)
                    .description("Latest-only records not sent: a newer one of their topic and key was queued")
                    .register(registry);
        }
    }
}
