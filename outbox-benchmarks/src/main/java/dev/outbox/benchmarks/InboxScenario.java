package dev.outbox.benchmarks;

import dev.outbox.Inbox;
import dev.outbox.MessageIds;
import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.store.mysql.MySqlInbox;
import dev.outbox.store.postgres.PostgresInbox;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The consumer side: how fast a {@link KafkaInboxConsumer} applies records (one transaction per record: the inbox
 * entry and an effect row), next to a bare consumer doing the same effect, one transaction per record, without the
 * inbox, on the same topic, database and machine in the same run. The difference is the price of effectively-once.
 * Each is timed from the first record handled to the last; the group join is not counted. After an unrecorded
 * warm-up of both, the bare consumer runs before and after the inbox consumer, so that drift of a shared machine
 * shows. Not thread-safe.
 */
final class InboxScenario {
    /** The records each consumer applies: at most --rows, at most this many (one transaction each). */
    static final int MAX_RECORDS = 20_000;
    private static final Duration WAIT = Duration.ofMinutes(10);

    /** One consumer's run. */
    record Result(String consumer, long records, double seconds) {
        double rate() {
            return records / seconds;
        }
    }

    private final BenchEnvironment env;
    private final BenchmarkOptions options;

    InboxScenario(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
    }

    /**
     * Warms up (both consumers over a small topic, not recorded), then fills a topic and runs the bare consumer, the
     * inbox consumer and the bare consumer again over it.
     */
    List<Result> run(int records) throws Exception {
        measure(Math.max(1, Math.min(records / 4, 5_000)));
        return measure(records);
    }

    private List<Result> measure(int records) throws Exception {
        String topic = env.newTopic("inbox");
        fill(topic, records);
        long total = records + options.partitions; // the topic's probe records count too
        DataSource db = env.pool();
        BenchEnvironment.execute(db, "DROP TABLE IF EXISTS bench_effects");
        BenchEnvironment.execute(db, "CREATE TABLE bench_effects (message_id CHAR(36) NOT NULL, bytes INT NOT NULL)");
        Result before = bare(topic, total, db, "before");
        BenchEnvironment.execute(db, "DELETE FROM bench_effects");
        Result inbox = inbox(topic, total, db);
        BenchEnvironment.execute(db, "DELETE FROM bench_effects");
        Result after = bare(topic, total, db, "after");
        return List.of(before, inbox, after);
    }

    private void fill(String topic, int records) {
        Map<String, Object> p = env.producerProperties();
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "bench-inbox-fill");
        byte[] value = new byte[options.valueBytes];
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < records; i++) {
                ProducerRecord<String, byte[]> r = new ProducerRecord<>(topic, "key-" + (i % options.keys), value);
                r.headers().add(new RecordHeader(KafkaMessageBroker.DEFAULT_MESSAGE_ID_HEADER,
                        MessageIds.toHeader(MessageIds.next())));
                producer.send(r);
            }
            producer.flush();
        }
    }

    private static void effect(Connection c, UUID id, byte[] value) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("INSERT INTO bench_effects (message_id, bytes) VALUES (?, ?)")) {
            s.setString(1, id.toString());
            s.setInt(2, value == null ? 0 : value.length);
            s.executeUpdate();
        }
    }

    /** A plain consumer: poll, a transaction per record with the effect, commit the offsets of each batch. */
    private Result bare(String topic, long total, DataSource db, String run) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.kafka().bootstrapServers());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, topic + "-bare-" + run);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        long done = 0;
        long first = 0;
        long deadline = System.nanoTime() + WAIT.toNanos();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new ByteArrayDeserializer()); Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            consumer.subscribe(List.of(topic));
            long dbNanos = 0;
            long kafkaNanos = 0;
            while (done < total && System.nanoTime() < deadline) {
                long t0 = System.nanoTime();
                ConsumerRecords<String, byte[]> batch = consumer.poll(Duration.ofMillis(100));
                if (first != 0) {
                    kafkaNanos += System.nanoTime() - t0;
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, byte[]> r : batch) {
                    long t1 = System.nanoTime();
                    if (first == 0) {
                        first = t1;
                    }
                    effect(c, UUID.randomUUID(), r.value());
                    c.commit();
                    dbNanos += System.nanoTime() - t1;
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    done++;
                }
                if (!offsets.isEmpty()) {
                    long t2 = System.nanoTime();
                    consumer.commitSync(offsets);
                    kafkaNanos += System.nanoTime() - t2;
                }
            }
            Progress.say("bare consumer, %s: %.1f s in the database (effect + commit), %.1f s in Kafka (poll + offset"
                    + " commits)", run, dbNanos / 1e9, kafkaNanos / 1e9);
        }
        return new Result("bare consumer, " + run + " (effect row, 1 tx/record)", done, (System.nanoTime() - first) / 1e9);
    }

    private Result inbox(String topic, long total, DataSource db) throws Exception {
        Inbox inbox;
        if (env.database().name().equals("postgres")) {
            BenchEnvironment.execute(db, "DROP TABLE IF EXISTS bench_inbox, bench_inbox_failed");
            PostgresInbox pg = PostgresInbox.builder(db).table("bench_inbox").build();
            pg.createSchema();
            inbox = pg;
        } else {
            BenchEnvironment.execute(db, "DROP TABLE IF EXISTS bench_inbox, bench_inbox_failed");
            MySqlInbox my = MySqlInbox.builder(db).table("bench_inbox").build();
            my.createSchema();
            inbox = my;
        }
        AtomicLong first = new AtomicLong();
        try (KafkaInboxConsumer consumer = KafkaInboxConsumer.builder()
                .bootstrapServers(env.kafka().bootstrapServers()).groupId(topic + "-inbox").topics(topic)
                .dataSource(db).inbox(inbox)
                .handler((c, r, id) -> {
                    first.compareAndSet(0, System.nanoTime());
                    effect(c, id, r.value());
                }).build()) {
            consumer.start();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (consumer.applied() + consumer.duplicates() < total && System.nanoTime() < deadline
                    && consumer.failure() == null) {
                BenchEnvironment.pause(Duration.ofMillis(5));
            }
            long end = System.nanoTime();
            return new Result("KafkaInboxConsumer (" + env.database().name() + " inbox)",
                    consumer.applied() + consumer.duplicates(), (end - first.get()) / 1e9);
        }
    }
}
