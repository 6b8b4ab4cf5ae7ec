package dev.outbox.broker.kafka;

import dev.outbox.Inbox;
import org.apache.kafka.clients.consumer.ConsumerConfig;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The settings of {@link KafkaInboxConsumer.Builder}: the Kafka properties, the topics, the database, the inbox, the
 * handler, the retry timings, and their validation into {@link InboxConsumerSettings}. Not thread-safe.
 *
 * @param <B> the concrete builder, returned by every setter
 */
abstract class InboxConsumerBuilder<B extends InboxConsumerBuilder<B>> {
    private final KafkaSettings settings = new KafkaSettings();
    private final List<String> topics = new ArrayList<>();
    private DataSource dataSource;
    private Inbox inbox;
    private String consumerName;
    private KafkaInboxConsumer.RecordHandler handler;
    private KafkaInboxConsumer.Listener listener = new KafkaInboxConsumer.Listener() {
    };
    private String messageIdHeader = KafkaMessageBroker.DEFAULT_MESSAGE_ID_HEADER;
    private int maxAttempts = KafkaInboxConsumer.DEFAULT_MAX_ATTEMPTS;
    private Duration initialBackoff = KafkaInboxConsumer.DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = KafkaInboxConsumer.DEFAULT_MAX_BACKOFF;
    private Duration purgeInterval = KafkaInboxConsumer.DEFAULT_PURGE_INTERVAL;
    private OnSequenceBreak onSequenceBreak = OnSequenceBreak.REPORT;
    private Duration sequenceHoldTimeout = KafkaInboxConsumer.DEFAULT_SEQUENCE_HOLD_TIMEOUT;
    private int sequenceKeysPerPartition = KafkaInboxConsumer.DEFAULT_SEQUENCE_KEYS_PER_PARTITION;

    InboxConsumerBuilder() {
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /**
     * Adds Kafka consumer properties; later values win.
     *
     * @param properties Kafka consumer properties (TLS, SASL, ...), copied at once; keys are converted with
     *                   {@code toString()}. Not {@code null}, and no value {@code null}. The enforced settings
     *                   (see the class documentation) are checked by {@link KafkaInboxConsumer.Builder#build()}.
     * @return this builder
     * @throws NullPointerException     if {@code properties} is {@code null}
     * @throws IllegalArgumentException if a name is blank or a value {@code null}
     */
    public B properties(Map<?, ?> properties) {
        settings.putAll(properties);
        return self();
    }

    /**
     * Sets one Kafka consumer property, replacing an earlier value of it.
     *
     * @param name  the property's name, as in {@link ConsumerConfig}; not blank
     * @param value its value, a string or the type Kafka expects; not {@code null}
     * @return this builder
     * @throws IllegalArgumentException if {@code name} is {@code null} or blank or {@code value} is {@code null}
     */
    public B property(String name, Object value) {
        settings.put(name, value);
        return self();
    }

    /**
     * Shorthand for {@code bootstrap.servers}.
     *
     * @param servers a comma-separated list of {@code host:port} pairs to reach the cluster; not blank
     * @return this builder
     * @throws IllegalArgumentException if {@code servers} is {@code null} or blank
     */
    public B bootstrapServers(String servers) {
        if (servers == null || servers.isBlank()) {
            throw new IllegalArgumentException("bootstrapServers must not be blank: '" + servers + "'");
        }
        settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        return self();
    }

    /**
     * Shorthand for {@code group.id}; also the inbox consumer name unless {@link #consumerName} is set.
     *
     * @param groupId the Kafka consumer group, under which offsets are committed; not blank. As the inbox
     *                consumer name it must also be at most {@value Inbox#MAX_CONSUMER_LENGTH} characters.
     * @return this builder
     * @throws IllegalArgumentException if {@code groupId} is {@code null} or blank
     */
    public B groupId(String groupId) {
        if (groupId == null || groupId.isBlank()) {
            throw new IllegalArgumentException("groupId must not be blank: '" + groupId + "'");
        }
        settings.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        return self();
    }

    /**
     * The topics to consume; at least one. Calls add up.
     *
     * @param topics topic names, valid as Kafka wants them (1 to 249 characters of {@code [a-zA-Z0-9._-]})
     * @return this builder
     * @throws IllegalArgumentException if a name is {@code null} or not a valid topic name (the names before
     *                                  it are added)
     */
    public B topics(String... topics) {
        for (String topic : topics) {
            String problem = KafkaSettings.topicProblem(topic);
            if (problem != null) {
                throw new IllegalArgumentException(problem);
            }
            this.topics.add(topic);
        }
        return self();
    }

    /**
     * Where transactions are opened: the database of the inbox and of the handler's effects.
     *
     * @param dataSource the data source (a pool, usually); not {@code null}. The consumer holds one connection
     *                   of it while it runs and replaces it after a database failure.
     * @return this builder
     * @throws NullPointerException if {@code dataSource} is {@code null}
     */
    public B dataSource(DataSource dataSource) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
        return self();
    }

    /**
     * The inbox (its tables must be in {@link #dataSource}'s database).
     *
     * @param inbox the inbox that records message ids and failed messages, for example a
     *              {@code PostgresInbox} or {@code MySqlInbox}; not {@code null}
     * @return this builder
     * @throws NullPointerException if {@code inbox} is {@code null}
     */
    public B inbox(Inbox inbox) {
        this.inbox = Objects.requireNonNull(inbox, "inbox must not be null");
        return self();
    }

    /**
     * The name the inbox records entries under; default the group id. Two consumers under the same name
     * deduplicate against each other; under different names each applies every message once.
     *
     * @param consumerName 1 to {@value Inbox#MAX_CONSUMER_LENGTH} characters, not blank, without control
     *                     characters
     * @return this builder
     * @throws IllegalArgumentException if {@code consumerName} is {@code null} or not such a name
     */
    public B consumerName(String consumerName) {
        this.consumerName = Inbox.validateConsumer(consumerName);
        return self();
    }

    /**
     * What to do with each new message. Required.
     *
     * @param handler applies each record's effect; runs on the consumer's thread, one record at a time, so it
     *                need not be thread-safe unless shared. Not {@code null}.
     * @return this builder
     * @throws NullPointerException if {@code handler} is {@code null}
     */
    public B handler(KafkaInboxConsumer.RecordHandler handler) {
        this.handler = Objects.requireNonNull(handler, "handler must not be null");
        return self();
    }

    /**
     * Hears what happens to records; default none.
     *
     * @param listener called on the consumer's thread, so it must return quickly and should not throw; not
     *                 {@code null}
     * @return this builder
     * @throws NullPointerException if {@code listener} is {@code null}
     */
    public B listener(KafkaInboxConsumer.Listener listener) {
        this.listener = Objects.requireNonNull(listener, "listener must not be null");
        return self();
    }

    /**
     * The header that carries the message id; default {@value KafkaMessageBroker#DEFAULT_MESSAGE_ID_HEADER},
     * as the outbox's broker writes it. Null: use (topic, partition, offset) for every record.
     *
     * @param name the header's name, or {@code null} for none; not blank
     * @return this builder
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public B messageIdHeader(String name) {
        if (name != null && name.isBlank()) {
            throw new IllegalArgumentException("messageIdHeader must not be blank: '" + name + "'");
        }
        this.messageIdHeader = name;
        return self();
    }

    /**
     * How many times the handler may fail on a record before it is recorded as failed; default 5, 1 to 100.
     *
     * @param maxAttempts the attempts per record, from 1 (no retry) to 100; database failures do not count
     * @return this builder
     * @throws IllegalArgumentException if {@code maxAttempts} is outside 1 to 100
     */
    public B maxAttempts(int maxAttempts) {
        if (maxAttempts < 1 || maxAttempts > 100) {
            throw new IllegalArgumentException("maxAttempts must be between 1 and 100: " + maxAttempts);
        }
        this.maxAttempts = maxAttempts;
        return self();
    }

    /**
     * The wait after the first failure; doubled after each next one. Default 100 ms, at least 1 ms.
     *
     * @param backoff the first wait, at least 1 ms and at most {@link #maxBackoff} (checked by {@link KafkaInboxConsumer.Builder#build()})
     * @return this builder
     * @throws NullPointerException     if {@code backoff} is {@code null}
     * @throws IllegalArgumentException if {@code backoff} is under 1 ms
     */
    public B initialBackoff(Duration backoff) {
        this.initialBackoff = positive("initialBackoff", backoff);
        return self();
    }

    /**
     * The longest wait between two tries (of a handler or of the database). Default 5 s.
     *
     * @param backoff the cap of the waits, at least 1 ms and at least {@link #initialBackoff} (checked by
     *                {@link KafkaInboxConsumer.Builder#build()})
     * @return this builder
     * @throws NullPointerException     if {@code backoff} is {@code null}
     * @throws IllegalArgumentException if {@code backoff} is under 1 ms
     */
    public B maxBackoff(Duration backoff) {
        this.maxBackoff = positive("maxBackoff", backoff);
        return self();
    }

    /**
     * How often expired inbox entries are purged ({@link Inbox#purgeExpired()}); default 1 hour.
     *
     * @param interval the time between two purges, on the consumer's thread, the first one interval after the
     *                 start; at least 1 ms
     * @return this builder
     * @throws NullPointerException     if {@code interval} is {@code null}
     * @throws IllegalArgumentException if {@code interval} is under 1 ms
     */
    public B purgeInterval(Duration interval) {
        this.purgeInterval = positive("purgeInterval", interval);
        return self();
    }

    /**
     * What the key sequence check does when a record's {@link dev.outbox.KeySequence#SEQUENCE} number is not the
     * one after the last its key's records carried (see {@link SequenceBreak.Kind} and the class documentation of
     * {@link KafkaInboxConsumer}). Default {@link OnSequenceBreak#REPORT}: report and handle the record as usual.
     *
     * <p>With {@link OnSequenceBreak#HOLD}, a {@link SequenceBreak.Kind#GAP} or {@link SequenceBreak.Kind#REORDER}
     * record is reported at once and not handled: its transaction is rolled back before the handler runs, and its
     * partition waits (the other partitions carry on, the consumer stays in its group) until
     * {@link KafkaInboxConsumer#release} or {@link #sequenceHoldTimeout}, then the record is handled and the partition
     * goes on. A hold keeps the whole partition, not only the key: Kafka orders a partition, not a key. It does not
     * let a missing record arrive — in the same partition that record would be behind the held one — it stops the
     * partition's effects at the hole until someone decides. A held partition that is revoked is no longer held; its
     * next owner has no memory of the key and takes the record as a baseline.
     *
     * @param action {@link OnSequenceBreak#OFF}, {@link OnSequenceBreak#REPORT} or {@link OnSequenceBreak#HOLD}; not
     *               {@code null}
     * @return this builder
     * @throws NullPointerException if {@code action} is {@code null}
     */
    public B onSequenceBreak(OnSequenceBreak action) {
        this.onSequenceBreak = Objects.requireNonNull(action, "onSequenceBreak must not be null");
        return self();
    }

    /**
     * The longest a partition held on a sequence break waits for {@link KafkaInboxConsumer#release} before its record
     * is handled anyway; default 5 minutes. Only used with {@link OnSequenceBreak#HOLD}.
     *
     * @param timeout at least 1 ms
     * @return this builder
     * @throws NullPointerException     if {@code timeout} is {@code null}
     * @throws IllegalArgumentException if {@code timeout} is under 1 ms
     */
    public B sequenceHoldTimeout(Duration timeout) {
        this.sequenceHoldTimeout = positive("sequenceHoldTimeout", timeout);
        return self();
    }

    /**
     * How many keys' last sequence numbers the check remembers per partition; default 10,000. Past it the key seen
     * least recently is forgotten, and its next record is taken as a new baseline, unchecked: a break at that record
     * is not seen. Each remembered key costs about 100 bytes plus its string.
     *
     * @param keys from 1 to 10,000,000
     * @return this builder
     * @throws IllegalArgumentException if {@code keys} is outside 1 to 10,000,000
     */
    public B sequenceKeysPerPartition(int keys) {
        if (keys < 1 || keys > 10_000_000) {
            throw new IllegalArgumentException("sequenceKeysPerPartition must be between 1 and 10000000: " + keys);
        }
        this.sequenceKeysPerPartition = keys;
        return self();
    }

    private static Duration positive(String name, Duration d) {
        Objects.requireNonNull(d, name + " must not be null");
        if (d.toMillis() < 1) {
            throw new IllegalArgumentException(name + " must be at least 1 ms: " + d);
        }
        return d;
    }

    /**
     * Validates the whole.
     *
     * @return the settings, with the Kafka properties completed
     * @throws IllegalArgumentException naming a missing part, a bad relation or a Kafka setting that breaks a
     *                                  guarantee
     */
    final InboxConsumerSettings settings() {
        if (topics.isEmpty()) {
            throw new IllegalArgumentException("topics must be set: at least one topic");
        }
        if (dataSource == null) {
            throw new IllegalArgumentException("dataSource must be set");
        }
        if (inbox == null) {
            throw new IllegalArgumentException("inbox must be set");
        }
        if (handler == null) {
            throw new IllegalArgumentException("handler must be set");
        }
        if (maxBackoff.compareTo(initialBackoff) < 0) {
            throw new IllegalArgumentException("maxBackoff (" + maxBackoff + ") must be at least initialBackoff ("
                    + initialBackoff + ")");
        }
        KafkaSettings s = new KafkaSettings(settings);
        String servers = s.string(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (servers == null || servers.isEmpty()) {
            throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG
                    + "' must be set");
        }
        String group = s.string(ConsumerConfig.GROUP_ID_CONFIG);
        if (group == null || group.isEmpty()) {
            throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.GROUP_ID_CONFIG
                    + "' must be set: offsets are committed for the group");
        }
        s.require(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false", "offsets are committed after the"
                + " database commit; an automatic commit could skip a record whose effect never committed");
        s.forbid(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, "keys are read as UTF-8 strings");
        s.forbid(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, "values are read as bytes");
        s.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return new InboxConsumerSettings(topics, dataSource, inbox, consumerName != null ? consumerName
                : Inbox.validateConsumer(group), handler, listener, messageIdHeader, maxAttempts, initialBackoff,
                maxBackoff, purgeInterval, onSequenceBreak, sequenceHoldTimeout, sequenceKeysPerPartition, s.toMap());
    }
}
