package dev.outbox.broker.kafka;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.PurgeListener;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * Publishes outbox records to Kafka with a single idempotent {@link KafkaProducer} or, with a
 * {@linkplain Builder#transactionalId transactional id}, with Kafka's transactional producer, which fences a deposed
 * leader's sends (consumers must read with {@code isolation.level=read_committed} to benefit).
 *
 * <pre>{@code
 * KafkaMessageBroker broker = KafkaMessageBroker.builder()
 *         .properties(myKafkaProperties)        // bootstrap.servers, TLS, SASL, compression, ...
 *         .build();
 * }</pre>
 *
 * <h2>What is sent</h2>
 * Each record goes to its topic with the row's key (UTF-8, {@link StringSerializer}), so that Kafka's
 * partitioner places all records of a key on one partition; the value's bytes (a null value stays null: a
 * tombstone); the headers in their order, repeats kept, followed by the message id in the header
 * {@value #DEFAULT_MESSAGE_ID_HEADER} (the name is configurable) and, if configured, the creation time in a header
 * of its own; and, by default, the row's creation time as the record timestamp ({@link RecordTimestamp}).
 *
 * <h2>Enforced producer settings</h2>
 * Settings that per-key order (G2) and bounded sends depend on are set by the broker; a user value that
 * contradicts them is rejected by {@link Builder#build()} with an {@link IllegalArgumentException} naming the
 * setting and its value:
 * <ul>
 *   <li>{@code enable.idempotence=true}, {@code acks=all}, {@code retries} ≥ 1 and
 *       {@code max.in.flight.requests.per.connection} ≤ 5: retries never reorder or duplicate within a
 *       partition;</li>
 *   <li>{@code delivery.timeout.ms} bounded (default {@link #DEFAULT_DELIVERY_TIMEOUT}, at most
 *       {@link #MAX_DELIVERY_TIMEOUT}) and at least {@code linger.ms + request.timeout.ms}: every send
 *       completes within it. With NELI it must stay below the gap between a fenced leader stopping and the
 *       next leader starting ({@code session.timeout.ms − heartbeat timeout − heartbeat.interval.ms}), which
 *       {@link KafkaLeaderTransport.Builder#build()} checks;</li>
 *   <li>{@code max.block.ms} bounded (default the smaller of 5 s and half of {@code delivery.timeout.ms}, at
 *       most {@code delivery.timeout.ms}): {@link #send} never blocks longer on missing metadata or a full
 *       buffer, and a metadata wait that ran out leaves the rest of the delivery timeout to confirm that the
 *       topic does not exist;</li>
 *   <li>{@code partitioner.ignore.keys} must not be true (it would scatter a key over partitions);
 *       {@code transactional.id} (use {@link Builder#transactionalId}), {@code key.serializer} and
 *       {@code value.serializer} must not be set.</li>
 * </ul>
 * Everything else (TLS, SASL, compression, batching, client id, interceptors) passes through unchanged.
 *
 * <h2>Failures</h2>
 * A failed send completes with a {@link DeliveryException}. Permanent: record or batch too large, an illegal
 * topic name, a topic that does not exist (confirmed with the admin API after the producer's metadata wait
 * ran out, so it only happens when the broker does not auto-create topics), not authorized for the topic or
 * cluster, a serialization error, an invalid record or timestamp. Everything else is retriable, including
 * authentication failures: they concern the connection, not the record, and parking every record of the
 * outbox during a credential rotation would do more harm than retrying.
 *
 * <p>Thread-safe: {@link #send} may be called from any thread; completions run on the producer's I/O thread
 * (or, for a failure detected before sending, on the caller's). Do not call {@link #close} from a completion.
 */
public final class KafkaMessageBroker implements MessageBroker {
    /** The default name of the header that carries the message id: {@value}. */
    public static final String DEFAULT_MESSAGE_ID_HEADER = "outbox-message-id";

    /** Default {@code delivery.timeout.ms}: 8 s. */
    public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(8);
    /** Largest {@code delivery.timeout.ms} accepted: 2 minutes (Kafka's own default). */
    public static final Duration MAX_DELIVERY_TIMEOUT = Duration.ofMinutes(2);
    /**
     * Default {@code max.block.ms}: 5 s, or half of {@code delivery.timeout.ms} if that is less (the other half is
     * left to confirm that a topic whose metadata never came does not exist).
     */
    public static final Duration DEFAULT_MAX_BLOCK = Duration.ofSeconds(5);

    /**
     * The longest transactional id {@link Builder#transactionalId} accepts: {@value}, leaving room for the shard
     * suffix.
     */
    public static final int MAX_TRANSACTIONAL_ID_LENGTH = 200;

    private static final Logger log = LoggerFactory.getLogger(KafkaMessageBroker.class);

    /** Which time a record carries as its Kafka timestamp. */
    public enum RecordTimestamp {
        /**
         * The outbox row's {@code createdAt} (the default): consumers see when the event happened. A row that
         * waited in the outbox longer than the topic's {@code retention.ms} is then eligible for deletion soon
         * after it is published, and a broker with {@code log.message.timestamp.before.max.ms} set rejects it
         * (a permanent failure: the record is parked). Use {@link #SEND_TIME} if either matters.
         */
        CREATED_AT,
        /** The time the producer sends the record (Kafka's default). */
        SEND_TIME
    }

    /** The idempotent producer; null with a transactional id (then {@link #transactions} sends). */
    private final Producer<String, byte[]> producer;
    /** The transactional sending, or null without a transactional id. */
    private final KafkaTransactions transactions;
    private final String transactionalId;
    /** What {@link #forShard} builds a shard's broker from: the builder's settings, copied. */
    private final Builder template;
    private final Map<String, Object> producerConfig;
    /** The shards' brokers made by {@link #forShard}, closed with this one. */
    private final List<KafkaMessageBroker> shardBrokers = new ArrayList<>();
    private final Map<String, Object> adminConfig;
    /** How an outbox record becomes a Kafka record. */
    private final KafkaRecordMapper records;
    private final Duration deliveryTimeout;
    private final Set<CompletableFuture<Void>> pending = ConcurrentHashMap.newKeySet();
    /** Which topics can be sent to without a metadata wait; records of the others wait there, not in send. */
    private final KafkaTopics topics;
    /**
     * With a transactional id: a plain producer whose only use is fetching topics' metadata for {@link #topics}
     * (created by the first warm-up); null until then, and always null without a transactional id.
     */
    private Producer<String, byte[]> metadataProducer;
    /** Set by {@link #close} once the warm-ups are over: no metadata producer is created after it. */
    private boolean metadataClosed;
    private final Object adminLock = new Object();
    private Admin admin;
    private volatile boolean closed;
    /** The producer's {@code linger.ms}: with 0 it holds nothing back, and {@link #sendPending} has nothing to do. */
    private final long lingerMs;
    /** Flushes the idempotent producer on {@link #sendPending}; null with a transactional id. */
    private final KafkaLingerFlush lingerFlush;

    private KafkaMessageBroker(Builder b, Map<String, Object> producerConfig, Map<String, Object> adminConfig,
                               String transactionalId) {
        this.template = b.copy();
        this.producerConfig = producerConfig;
        this.transactionalId = transactionalId;
        this.records = new KafkaRecordMapper(b.timestamp, b.messageIdHeader, b.createdAtHeader);
        this.deliveryTimeout = Duration.ofMillis(((Number) producerConfig.get(
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG)).longValue());
        this.adminConfig = adminConfig;
        this.lingerMs = ((Number) producerConfig.get(ProducerConfig.LINGER_MS_CONFIG)).longValue();
        if (transactionalId != null) {
            Map<String, Object> config = new java.util.HashMap<>(producerConfig);
            config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
            try { // validates the configuration now; the transactional producer itself is created on the first send
                new ProducerConfig(withSerializers(config));
            } catch (KafkaException e) {
                throw new IllegalArgumentException("Kafka rejected the producer configuration: " + e.getMessage(), e);
            }
            this.producer = null;
            this.transactions = new KafkaTransactions(transactionalId, config, records::map, this::fail,
                    pending, b.progressTopic == null ? null
                    : new KafkaProgress(b.progressTopic, adminConfig, this::admin, deliveryTimeout));
        } else {
            this.transactions = null;
            try {
                this.producer = new KafkaProducer<>(producerConfig, new StringSerializer(), new ByteArraySerializer());
            } catch (KafkaException e) {
                throw new IllegalArgumentException("Kafka rejected the producer configuration: " + e.getMessage(), e);
            }
        }
        this.lingerFlush = producer == null ? null : new KafkaLingerFlush(producer);
        Object idle = producerConfig.get(ProducerConfig.METADATA_MAX_IDLE_CONFIG);
        this.topics = new KafkaTopics(this::metadataProducer, this::admin, deliveryTimeout,
                Duration.ofMillis(idle == null ? KafkaTopics.DEFAULT_METADATA_IDLE_MS : Long.parseLong(idle.toString())),
                this::produce, this::sendPending, pending);
    }

    /** The producer whose metadata tells whether a topic is ready (called by {@link #topics}' warm-ups). */
    private Producer<?, ?> metadataProducer() {
        if (producer != null) {
            return producer;
        }
        synchronized (adminLock) {
            // Not refused while closing: close() lets the warm-ups under way finish (their records are produced)
            // before it closes this producer.
            if (metadataClosed) {
                throw new IllegalStateException("Kafka broker is closed");
            }
            if (metadataProducer == null) {
                metadataProducer = new KafkaProducer<>(producerConfig, new StringSerializer(),
                        new ByteArraySerializer());
            }
            return metadataProducer;
        }
    }

    private static Map<String, Object> withSerializers(Map<String, Object> config) {
        Map<String, Object> c = new java.util.HashMap<>(config);
        c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return c;
    }

    /**
     * Starts a builder; not thread-safe.
     *
     * @return a new builder with the defaults and no Kafka property set
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The effective {@code delivery.timeout.ms}: every send completes within it.
     *
     * @return the timeout set, or {@link #DEFAULT_DELIVERY_TIMEOUT}; between 1 ms and
     *         {@link #MAX_DELIVERY_TIMEOUT}, in milliseconds
     */
    public Duration deliveryTimeout() {
        return deliveryTimeout;
    }

    /**
     * The transactional id this broker's producer uses, or null if it does not use transactions (the default); see
     * {@link Builder#transactionalId}.
     *
     * @return the id as set on the builder (a shard's broker from {@link #forShard}: that id with its
     *         {@code -shard-<n>} suffix), or {@code null}
     */
    public String transactionalId() {
        return transactionalId;
    }

    /**
     * Records refused because this broker's transactional producer was fenced by a newer producer of its
     * transactional id (each failed with {@link DeliveryException#isFenced()}), since it was built; counts those of
     * the shards' brokers ({@link #forShard}) too. Always 0 without a transactional id.
     *
     * @return the count, never negative; safe to read from any thread
     */
    public long fencedRecords() {
        return total(KafkaTransactions::fencedRecords);
    }

    /**
     * Kafka transactions committed by this broker (and its shards' brokers), since it was built; always 0 without a
     * transactional id. Records per transaction = records acknowledged / this.
     *
     * @return the count, never negative; safe to read from any thread
     */
    public long committedTransactions() {
        return total(KafkaTransactions::committedTransactions);
    }

    /**
     * Records acknowledged without being sent because an earlier producer of the transactional id had published them
     * ({@link Builder#exactlyOnce}), since the start, shards included.
     *
     * @return the count; 0 without exactly-once publishing
     */
    public long recordsPublishedBefore() {
        return total(KafkaTransactions::skippedRecords);
    }

    /** A count of this broker's transactions plus those of its shards' brokers. */
    private long total(ToLongFunction<KafkaTransactions> count) {
        long n = transactions == null ? 0 : count.applyAsLong(transactions);
        synchronized (shardBrokers) {
            for (KafkaMessageBroker b : shardBrokers) {
                n += b.total(count);
            }
        }
        return n;
    }

    /**
     * {@inheritDoc} With {@link Builder#exactlyOnce}: a {@link PurgeListener}, which the dispatcher tells of the
     * rows it purged, so that progress records stop listing them.
     */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        if (type == PurgeListener.class) {
            return template.progressTopic == null || transactions == null ? Optional.empty()
                    : Optional.of(type.cast((PurgeListener) transactions::purged));
        }
        return MessageBroker.super.capability(type);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Without a transactional id: this broker, shared (one producer for every shard). With one: a broker of its
     * own, with a producer of its own whose transactional id is {@code <transactionalId>-shard-<shard>}, so that a
     * shard's new leader fences only that shard's previous leader. Its producer (one I/O thread) and its transaction
     * thread are created by its first send, so a shard this instance never leads costs nothing. It is closed by
     * the shard's dispatcher, and with this broker.
     */
    @Override
    public MessageBroker forShard(int shard) {
        if (shard < 0) {
            throw new IllegalArgumentException("shard must not be negative: " + shard);
        }
        if (transactionalId == null) {
            return MessageBroker.super.forShard(shard);
        }
        synchronized (shardBrokers) {
            if (closed) {
                throw new IllegalStateException("Kafka broker is closed");
            }
            String id = transactionalId + "-shard-" + shard;
            KafkaMessageBroker b = new KafkaMessageBroker(template, producerConfig, adminConfig, id);
            shardBrokers.add(b);
            return b;
        }
    }

    /**
     * Records sent and not yet completed.
     *
     * @return the number of sends whose completion has not run yet (of this broker, not of its shards' brokers);
     *         a snapshot, safe to read from any thread
     */
    public int pendingRecords() {
        return pending.size();
    }

    /**
     * {@inheritDoc}
     *
     * <p>The stage is completed before the record stops counting as pending, so that {@link #flush} never
     * returns while a stage it covers is still incomplete.
     */
    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        Objects.requireNonNull(record, "record");
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (closed) {
            done.completeExceptionally(DeliveryException.outage("Kafka broker is closed; record "
                    + record.id() + " not sent", null));
            return done;
        }
        topics.send(record, done);
        return done;
    }

    /** Hands a record whose topic is ready ({@link KafkaTopics}) to the producer. */
    private void produce(OutboxRecord record, CompletableFuture<Void> done, long started) {
        pending.add(done);
        if (transactions != null) {
            transactions.send(record, done);
            return;
        }
        try {
            ProducerRecord<String, byte[]> pr = records.map(record);
            producer.send(pr, (metadata, error) -> {
                if (error == null) {
                    done.complete(null);
                    pending.remove(done); // after completing: flush must never miss a record in between
                    if (log.isDebugEnabled()) {
                        log.debug("record {} acknowledged at {}-{}@{}", record.id(), metadata.topic(),
                                metadata.partition(), metadata.offset());
                    }
                } else {
                    fail(record, done, error, started);
                }
            });
        } catch (RuntimeException e) {
            // KafkaProducer.send reports most problems through the callback; what it throws (a closed
            // producer, an interrupt, a rejected timestamp) becomes a failed stage all the same.
            fail(record, done, e, started);
        }
    }

    private void fail(OutboxRecord record, CompletableFuture<Void> done, Throwable error, long startedNanos) {
        topics.fail(record, done, error, startedNanos);
    }

    private Admin admin() {
        synchronized (adminLock) {
            if (closed) {
                throw new IllegalStateException("broker closed");
            }
            if (admin == null) {
                admin = Admin.create(adminConfig);
            }
            return admin;
        }
    }

    @Override
    public boolean flush(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        CompletableFuture<?>[] snapshot = pending.toArray(new CompletableFuture<?>[0]);
        if (snapshot.length == 0) {
            return true;
        }
        try {
            CompletableFuture.allOf(snapshot).handle((v, e) -> null)
                    .get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
            return true;
        } catch (java.util.concurrent.TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException e) {
            throw new IllegalStateException("unreachable: failures are handled", e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Flushes the producer on a thread of its own (started by the first call, one per broker): the batches it
     * holds back for {@code linger.ms} become ready at once, and this method returns without waiting. Calls made
     * while a flush is under way are served by one flush after it. With {@code linger.ms=0} it does nothing.
     */
    @Override
    public void sendPending() {
        if (lingerMs == 0 || closed || transactions != null) { // a commit sends everything at once
            return;
        }
        topics.sendPendingRequested();
        lingerFlush.request();
    }

    /**
     * Stops accepting records, lets the producer deliver what it holds for at most {@code timeout}, then closes
     * it forcibly: records still pending fail, and when this method returns the producer's I/O thread has
     * ended and its connections are closed, so none of its retries can reach Kafka afterwards. Idempotent.
     */
    @Override
    public synchronized void close(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (closed && pending.isEmpty() && admin == null && metadataProducer == null) {
            return;
        }
        closed = true;
        if (lingerFlush != null) {
            lingerFlush.close();
        }
        long started = System.nanoTime();
        Duration bound = timeout.isNegative() ? Duration.ZERO : timeout;
        List<KafkaMessageBroker> shards;
        synchronized (shardBrokers) {
            shards = List.copyOf(shardBrokers);
        }
        for (KafkaMessageBroker b : shards) {
            b.close(bound);
        }
        topics.close(bound);
        bound = bound.minusNanos(System.nanoTime() - started);
        bound = bound.isNegative() ? Duration.ZERO : bound;
        int abandoned = 0;
        if (transactions != null) {
            abandoned += transactions.close(bound);
        } else {
            try {
                producer.close(bound);
            } catch (RuntimeException e) {
                log.warn("closing the Kafka producer failed", e);
            }
        }
        for (CompletableFuture<Void> f : List.copyOf(pending)) {
            pending.remove(f);
            if (f.completeExceptionally(DeliveryException.retriable("Kafka broker closed before the record was"
                    + " acknowledged", null))) {
                abandoned++;
            }
        }
        synchronized (adminLock) {
            if (admin != null) {
                admin.close(Duration.ZERO);
                admin = null;
            }
            metadataClosed = true;
            if (metadataProducer != null) {
                metadataProducer.close(Duration.ZERO);
                metadataProducer = null;
            }
        }
        log.info("Kafka broker closed in {} ms{}", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                abandoned == 0 ? "" : "; " + abandoned + " unacknowledged record(s) failed");
    }

    @Override
    public String toString() {
        return "KafkaMessageBroker{deliveryTimeout=" + deliveryTimeout + ", timestamp=" + records.timestamp()
                + (transactionalId == null ? "" : ", transactionalId=" + transactionalId) + ", closed=" + closed + '}';
    }

    /** A Kafka header over an outbox header's name and bytes. */
    /**
     * Builds a {@link KafkaMessageBroker}: user properties pass through, the settings listed on the class are
     * enforced by {@link #build()}. Not thread-safe.
     */
    public static final class Builder {
        private final KafkaSettings settings = new KafkaSettings();
        private RecordTimestamp timestamp = RecordTimestamp.CREATED_AT;
        private String messageIdHeader = DEFAULT_MESSAGE_ID_HEADER;
        private String createdAtHeader;
        private String transactionalId;
        /** The progress topic of exactly-once publishing, or null without it. */
        private String progressTopic;

        private Builder() {
        }

        private Builder copy() {
            Builder b = new Builder();
            b.settings.putAll(settings.toMap());
            b.timestamp = timestamp;
            b.messageIdHeader = messageIdHeader;
            b.createdAtHeader = createdAtHeader;
            b.transactionalId = transactionalId;
            b.progressTopic = progressTopic;
            return b;
        }

        /**
         * Publishes with Kafka's transactional producer under this transactional id (default: none, an idempotent
         * producer without transactions). Use one id per outbox, the same on every instance that may lead it: when a
         * dispatcher becomes leader, its first send calls {@code initTransactions()}, which fences the producer of
         * the previous leader — a deposed leader (paused, cut off) that resumes finds its sends and commits refused
         * by Kafka ({@link DeliveryException#isFenced()}: its records leave flight without a verdict and it stands
         * down), instead of publishing records its successor already published. A sharded dispatcher's shards each
         * get an id of their own, {@code <id>-shard-<n>} ({@link #forShard}).
         *
         * <p>Records are sent in transactions and a record is acknowledged only once its transaction committed:
         * one thread per broker takes every record queued, sends them in one transaction and commits (a busy outbox
         * commits large transactions back to back, an idle one a transaction per record). Consumers must read with
         * {@code isolation.level=read_committed} to benefit: a {@code read_uncommitted} consumer (Kafka's default)
         * also sees records of aborted transactions — the zombie's refused ones among them.
         *
         * @param id 1 to {@value #MAX_TRANSACTIONAL_ID_LENGTH} characters, no whitespace or control characters
         * @return this builder
         * @throws IllegalArgumentException naming the id if it is blank, too long or contains whitespace
         */
        public Builder transactionalId(String id) {
            if (id == null || id.isEmpty() || id.length() > MAX_TRANSACTIONAL_ID_LENGTH
                    || id.chars().anyMatch(c -> Character.isWhitespace(c) || Character.isISOControl(c))) {
                throw new IllegalArgumentException("transactionalId must be 1 to " + MAX_TRANSACTIONAL_ID_LENGTH
                        + " characters without whitespace or control characters, was "
                        + (id == null ? "null" : "'" + id + "'"));
            }
            this.transactionalId = id;
            return this;
        }

        /**
         * Publishes exactly once ({@link #exactlyOnce(String)}) with the progress topic
         * {@value KafkaProgress#DEFAULT_TOPIC}, shared by every outbox of the cluster (each under its own key).
         *
         * @return this builder
         */
        public Builder exactlyOnce() {
            return exactlyOnce(KafkaProgress.DEFAULT_TOPIC);
        }

        /**
         * Publishes exactly once, with the {@linkplain #transactionalId transactional producer} (required): each
         * transaction also writes a record to {@code progressTopic} listing the outbox records published that the
         * table may still hold, and a new leader (or a shard's new owner), after fencing the previous one, reads it
         * and acknowledges those records without sending them again — so a leader that dies or is deposed after
         * Kafka committed its records and before the table forgot them causes no duplicate. Records are matched by
         * message id; a record without one is published at least once, as without this option. Consumers must read
         * with {@code isolation.level=read_committed}. Default: off. The topic is created (compacted, one partition)
         * if it does not exist; the producer must be allowed to write it and to read it.
         *
         * @param progressTopic the progress topic's name; a legal Kafka topic name
         * @return this builder
         * @throws IllegalArgumentException naming the topic if it is not a legal topic name
         */
        public Builder exactlyOnce(String progressTopic) {
            if (progressTopic == null || !progressTopic.matches("[a-zA-Z0-9._-]{1,249}")) {
                throw new IllegalArgumentException("exactlyOnce's progress topic must be 1 to 249 letters, digits,"
                        + " '.', '_' or '-', was " + (progressTopic == null ? "null" : "'" + progressTopic + "'"));
            }
            this.progressTopic = progressTopic;
            return this;
        }

        /**
         * Adds Kafka producer properties (a {@link java.util.Properties} works); later values win.
         *
         * @param properties Kafka producer properties (bootstrap servers, TLS, SASL, compression, batching, ...),
         *                   copied at once; keys are converted with {@code toString()}. Not {@code null}, and no
         *                   value {@code null}. The enforced settings (see the class documentation) are checked by
         *                   {@link #build()}.
         * @return this builder
         * @throws NullPointerException     if {@code properties} is {@code null}
         * @throws IllegalArgumentException if a name is blank or a value {@code null}
         */
        public Builder properties(Map<?, ?> properties) {
            settings.putAll(properties);
            return this;
        }

        /**
         * Sets one Kafka producer property, replacing an earlier value of it.
         *
         * @param name  the property's name, as in {@link ProducerConfig}; not blank
         * @param value its value, a string or the type Kafka expects; not {@code null}
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is {@code null} or blank or {@code value} is {@code null}
         */
        public Builder property(String name, Object value) {
            settings.put(name, value);
            return this;
        }

        /**
         * Shorthand for {@code bootstrap.servers}.
         *
         * @param servers a comma-separated list of {@code host:port} pairs to reach the cluster; not blank
         * @return this builder
         * @throws IllegalArgumentException if {@code servers} is {@code null} or blank
         */
        public Builder bootstrapServers(String servers) {
            if (servers == null || servers.isBlank()) {
                throw new IllegalArgumentException("bootstrapServers must not be blank: '" + servers + "'");
            }
            settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
            return this;
        }

        /**
         * Shorthand for {@code delivery.timeout.ms}; default {@link #DEFAULT_DELIVERY_TIMEOUT}.
         *
         * @param timeout the bound on every send, positive and at most {@link #MAX_DELIVERY_TIMEOUT} (checked by
         *                {@link #build()}, with its relation to {@code linger.ms} and {@code request.timeout.ms});
         *                millisecond precision
         * @return this builder
         * @throws NullPointerException     if {@code timeout} is {@code null}
         * @throws IllegalArgumentException if {@code timeout} is zero or negative
         */
        public Builder deliveryTimeout(Duration timeout) {
            settings.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, KafkaSettings.millis("deliveryTimeout", timeout));
            return this;
        }

        /**
         * Which time records carry as their timestamp; {@link RecordTimestamp#CREATED_AT} by default.
         *
         * @param timestamp the time to use; not {@code null}
         * @return this builder
         * @throws NullPointerException if {@code timestamp} is {@code null}
         */
        public Builder recordTimestamp(RecordTimestamp timestamp) {
            this.timestamp = Objects.requireNonNull(timestamp, "timestamp");
            return this;
        }

        /**
         * The header that carries each record's message id (its text form, 36 ASCII characters), added after the
         * message's own headers; default {@value KafkaMessageBroker#DEFAULT_MESSAGE_ID_HEADER}. Null sends no id
         * (consumers then fall back to the record's topic, partition and offset). Records from a store that
         * assigns no ids carry none.
         *
         * @param name the header's name, or {@code null} to send no id; not blank, no leading or trailing
         *             whitespace, and not the {@link #createdAtHeader}
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is blank or padded with whitespace
         */
        public Builder messageIdHeader(String name) {
            this.messageIdHeader = headerName("messageIdHeader", name);
            return this;
        }

        /**
         * A header that carries each record's creation time (ISO-8601, UTC, e.g. {@code 2026-11-23T10:15:30.123Z});
         * default none. Useful where the record timestamp is {@link RecordTimestamp#SEND_TIME}, or to measure how long
         * a message waited.
         *
         * @param name the header's name, or {@code null} for none; not blank, no leading or trailing whitespace,
         *             and not the {@link #messageIdHeader}
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is blank or padded with whitespace
         */
        public Builder createdAtHeader(String name) {
            this.createdAtHeader = headerName("createdAtHeader", name);
            return this;
        }

        private static String headerName(String what, String name) {
            if (name != null && (name.isBlank() || !name.strip().equals(name))) {
                throw new IllegalArgumentException(what + " must not be blank or padded: '" + name + "'");
            }
            return name;
        }

        /**
         * Validates the properties and creates the producer (it connects lazily, on the first send).
         *
         * @return a new broker, ready to {@link KafkaMessageBroker#send send}; {@link KafkaMessageBroker#close()}
         *         it when done (it holds a producer and its I/O thread)
         * @throws IllegalArgumentException naming the setting and value that breaks a guarantee
         */
        public KafkaMessageBroker build() {
            KafkaSettings s = new KafkaSettings(settings);
            Map<String, Object> producerConfig = producerConfig(s);
            Map<String, Object> adminConfig = s.only(AdminClientConfig.configNames());
            adminConfig.remove(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG);
            adminConfig.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5_000);
            adminConfig.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
            if (s.has(ProducerConfig.CLIENT_ID_CONFIG)) {
                adminConfig.put(AdminClientConfig.CLIENT_ID_CONFIG, s.string(ProducerConfig.CLIENT_ID_CONFIG)
                        + "-topic-check");
            }
            if (messageIdHeader != null && messageIdHeader.equals(createdAtHeader)) {
                throw new IllegalArgumentException("messageIdHeader and createdAtHeader must differ: '"
                        + messageIdHeader + "'");
            }
            if (progressTopic != null && transactionalId == null) {
                throw new IllegalArgumentException("exactlyOnce(\"" + progressTopic + "\") needs the transactional"
                        + " producer: set transactionalId(...) too");
            }
            return new KafkaMessageBroker(this, producerConfig, adminConfig, transactionalId);
        }

        static Map<String, Object> producerConfig(KafkaSettings s) {
            return KafkaProducerSettings.enforce(s);
        }
    }
}
