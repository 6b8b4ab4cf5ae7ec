package dev.outbox.broker.kafka;

import dev.outbox.KeySequence;
import dev.outbox.MessageIds;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLRecoverableException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link KafkaInboxConsumer}'s key sequence check on a real Kafka and a real Postgres inbox, with records produced
 * with the {@link KeySequence} headers directly: a clean run reports nothing, a planted gap, reorder, replay and skip
 * are each reported as what they are, a redelivery is not reported, and {@link OnSequenceBreak#HOLD} holds the
 * partition until it is released or its timeout passes; a break whose COMMIT was applied although the connection
 * failed during it is reported once.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class KafkaInboxSequenceCheckTest {
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static KafkaServer kafka;
    private static JdbcServer pg;
    private static DataSource db;

    @BeforeAll
    static void servers() {
        kafka = TestServers.kafka();
        pg = TestServers.postgres();
        db = pg.dataSource(pg.createDatabase("inbox_sequence"));
    }

    private static String name(String prefix) {
        return prefix + "_" + NAMES.incrementAndGet() + "_" + Long.toHexString(System.nanoTime() & 0xffffff);
    }

    /** One record to send: its key, its value, its message id and its sequence headers. */
    private record Rec(String key, long seq, UUID id, boolean replayed, List<Long> skipped, String value) {
        static Rec of(String key, long seq) {
            return new Rec(key, seq, MessageIds.next(), false, List.of(), key + "-" + seq);
        }

        Rec asReplayed() {
            return new Rec(key, seq, MessageIds.next(), true, skipped, value + "-replayed");
        }

        Rec skipping(Long... numbers) {
            return new Rec(key, seq, id, replayed, List.of(numbers), value);
        }
    }

    /** Sends the records in order to partition 0 of {@code topic}, with the headers the outbox writes. */
    private static void send(String topic, List<Rec> records) throws Exception {
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1), new StringSerializer(),
                new ByteArraySerializer())) {
            for (Rec r : records) {
                ProducerRecord<String, byte[]> pr = new ProducerRecord<>(topic, 0, r.key(),
                        r.value().getBytes(StandardCharsets.UTF_8));
                pr.headers().add(KafkaMessageBroker.DEFAULT_MESSAGE_ID_HEADER, MessageIds.toHeader(r.id()));
                pr.headers().add(KeySequence.SEQUENCE, KeySequence.encode(r.seq()));
                if (r.replayed()) {
                    pr.headers().add(KeySequence.REPLAYED, KeySequence.encode(42));
                }
                if (!r.skipped().isEmpty()) {
                    pr.headers().add(KeySequence.SKIPPED, KeySequence.encodeList(r.skipped()));
                }
                producer.send(pr).get(10, TimeUnit.SECONDS);
            }
        }
    }

    /** Collects the breaks reported and when, and when each value was applied. */
    private static final class Heard implements KafkaInboxConsumer.Listener {
        final List<SequenceBreak> breaks = Collections.synchronizedList(new ArrayList<>());
        final Map<String, Long> appliedAt = new java.util.concurrent.ConcurrentHashMap<>();
        final AtomicLong lastBreakAt = new AtomicLong();

        @Override
        public void sequenceBreak(SequenceBreak breakage) {
            lastBreakAt.set(System.nanoTime());
            breaks.add(breakage);
        }

        @Override
        public void applied(ConsumerRecord<String, byte[]> record, UUID messageId) {
            appliedAt.put(new String(record.value(), StandardCharsets.UTF_8), System.nanoTime());
        }
    }

    private static KafkaInboxConsumer.Builder consumer(String topic, String group, PostgresInbox inbox,
                                                       String effects, Heard heard) {
        return KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers()).groupId(group).topics(topic)
                .dataSource(db).inbox(inbox).handler(InboxTestSupport.effectHandler(effects)).listener(heard)
                .property("session.timeout.ms", 6000).property("heartbeat.interval.ms", 500);
    }

    private static long breaks(KafkaInboxConsumer c) {
        long n = 0;
        for (SequenceBreak.Kind k : SequenceBreak.Kind.values()) {
            n += c.sequenceBreaks(k);
        }
        return n;
    }

    private String topic(String prefix, int partitions) {
        String topic = name(prefix).replace('_', '-');
        kafka.createTopic(topic, partitions);
        return topic;
    }

    private String effects() throws Exception {
        String effects = name("effects");
        InboxTestSupport.createEffects(db, effects);
        return effects;
    }

    @Test
    void aCleanRunOfManyKeysReportsNothingAndThenAGapIsSeen() throws Exception {
        String topic = topic("seq-clean", 1);
        String effects = effects();
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        List<Rec> records = new ArrayList<>();
        for (long n = 1; n <= 10; n++) {
            for (int k = 0; k < 30; k++) {
                records.add(Rec.of("key-" + k, n));
            }
        }
        send(topic, records);
        Heard heard = new Heard();
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, effects, heard).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 300, Duration.ofSeconds(60), () -> "applied " + c.applied());
            assertThat(heard.breaks).isEmpty();
            assertThat(breaks(c)).isZero();

            // The check was on all along: one number left out of one key now shows.
            send(topic, List.of(Rec.of("key-7", 12)));
            Await.untilOrFail(() -> c.applied() == 301, Duration.ofSeconds(60), () -> "applied " + c.applied());
            assertThat(heard.breaks).singleElement().satisfies(b -> {
                assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.GAP);
                assertThat(b.key()).isEqualTo("key-7");
                assertThat(b.missing()).containsExactly(11L);
            });
        }
    }

    @Test
    void aGapAReorderAReplayAndASkipAreEachReportedAsWhatTheyAre() throws Exception {
        String topic = topic("seq-breaks", 1);
        String effects = effects();
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        Rec replay2 = Rec.of("replay", 2);
        send(topic, List.of(
                Rec.of("gap", 1), Rec.of("gap", 2), Rec.of("gap", 4),
                Rec.of("reorder", 1), Rec.of("reorder", 3), Rec.of("reorder", 2),
                Rec.of("replay", 1), replay2, Rec.of("replay", 3), replay2.asReplayed(),
                Rec.of("skip", 1), Rec.of("skip", 4).skipping(2L, 3L),
                Rec.of("plain", 1)));
        Heard heard = new Heard();
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, effects, heard).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 13, Duration.ofSeconds(60), () -> "applied " + c.applied());
            assertThat(heard.breaks).extracting(SequenceBreak::key, SequenceBreak::kind, SequenceBreak::expected,
                    SequenceBreak::actual, SequenceBreak::missing).containsExactly(
                    org.assertj.core.groups.Tuple.tuple("gap", SequenceBreak.Kind.GAP, 3L, 4L, List.of(3L)),
                    org.assertj.core.groups.Tuple.tuple("reorder", SequenceBreak.Kind.GAP, 2L, 3L, List.of(2L)),
                    org.assertj.core.groups.Tuple.tuple("reorder", SequenceBreak.Kind.REORDER, 4L, 2L, List.of()),
                    org.assertj.core.groups.Tuple.tuple("replay", SequenceBreak.Kind.REPLAY, 4L, 2L, List.of()),
                    org.assertj.core.groups.Tuple.tuple("skip", SequenceBreak.Kind.SKIP, 2L, 4L, List.of(2L, 3L)));
            assertThat(heard.breaks).allSatisfy(b -> {
                assertThat(b.topic()).isEqualTo(topic);
                assertThat(b.partition()).isZero();
            });
            assertThat(heard.breaks.get(0).offset()).isEqualTo(2);
            assertThat(c.sequenceBreaks(SequenceBreak.Kind.GAP)).isEqualTo(2);
            assertThat(c.sequenceBreaks(SequenceBreak.Kind.REORDER)).isEqualTo(1);
            assertThat(c.sequenceBreaks(SequenceBreak.Kind.REPLAY)).isEqualTo(1);
            assertThat(c.sequenceBreaks(SequenceBreak.Kind.SKIP)).isEqualTo(1);
        }
        assertThat(InboxTestSupport.effectCounts(db, effects)).as("REPORT carries on: every record applied")
                .hasSize(13);
    }

    @Test
    void aRedeliveryIsNotReportedAndTheCheckGoesOnAfterIt() throws Exception {
        String topic = topic("seq-redelivery", 1);
        String effects = effects();
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        Rec k2 = Rec.of("k", 2);
        // The same record twice (an outbox retry after a lost acknowledgement): same id, same number.
        send(topic, List.of(Rec.of("k", 1), k2, k2, Rec.of("k", 3)));
        Heard heard = new Heard();
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, effects, heard).consumerName("seq")
                .build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 3 && c.duplicates() == 1, Duration.ofSeconds(60),
                    () -> c.applied() + "/" + c.duplicates());
            assertThat(heard.breaks).isEmpty();
        }
        // A consumer that starts again from the beginning (its offsets lost, or a crash before the offset commit):
        // everything redelivered, nothing reported; the memory the redeliveries rebuilt still sees the next gap.
        send(topic, List.of(Rec.of("k", 4), Rec.of("k", 6)));
        Heard again = new Heard();
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, effects, again).consumerName("seq")
                .build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 2 && c.duplicates() == 4, Duration.ofSeconds(60),
                    () -> c.applied() + "/" + c.duplicates());
            assertThat(again.breaks).singleElement().satisfies(b -> {
                assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.GAP);
                assertThat(b.missing()).containsExactly(5L);
            });
        }
    }

    @Test
    void holdKeepsTheKeysPartitionUntilReleasedAndReportsTheBreakOnce() throws Exception {
        String topic = topic("seq-hold", 1);
        String effects = effects();
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        send(topic, List.of(Rec.of("s", 1), Rec.of("s", 3).skipping(2L), // deliberate: not held
                Rec.of("k", 1), Rec.of("k", 2), Rec.of("k", 4), Rec.of("other", 1)));
        Heard heard = new Heard();
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, effects, heard)
                .onSequenceBreak(OnSequenceBreak.HOLD).sequenceHoldTimeout(Duration.ofMinutes(2)).build()) {
            c.start();
            Await.untilOrFail(() -> !c.held().isEmpty(), Duration.ofSeconds(60), () -> "applied " + c.applied());
            assertThat(c.held()).singleElement().satisfies(b -> {
                assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.GAP);
                assertThat(b.key()).isEqualTo("k");
                assertThat(b.actual()).isEqualTo(4);
            });
            // Held: the gap record's transaction was rolled back before its handler ran, and the record behind it
            // in the partition waits too.
            assertThat(c.applied()).isEqualTo(4);
            assertThat(InboxTestSupport.effectCounts(db, effects)).containsOnlyKeys("s-1", "s-3", "k-1", "k-2");
            assertThat(c.release(topic, 1)).as("not held").isFalse();

            assertThat(c.release(topic, 0)).isTrue();
            Await.untilOrFail(() -> c.applied() == 6, Duration.ofSeconds(60), () -> "applied " + c.applied());
            assertThat(c.held()).isEmpty();
            assertThat(c.release(topic, 0)).as("nothing held any more").isFalse();
        }
        assertThat(heard.breaks).extracting(SequenceBreak::kind)
                .as("reported once each, though the held record was looked at again until released")
                .containsExactly(SequenceBreak.Kind.SKIP, SequenceBreak.Kind.GAP);
        assertThat(InboxTestSupport.effectCounts(db, effects)).hasSize(6).allSatisfy((v, n) -> assertThat(n)
                .as(v).isEqualTo(1));
    }

    @Test
    void aHeldReorderGoesOnByItselfOnceTheHoldTimeoutPasses() throws Exception {
        String topic = topic("seq-hold-timeout", 1);
        String effects = effects();
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        Rec k1 = Rec.of("k", 1);
        Rec late = new Rec("k", 1, MessageIds.next(), false, List.of(), "k-1-again");
        send(topic, List.of(k1, Rec.of("k", 2), late));
        Heard heard = new Heard();
        Duration timeout = Duration.ofMillis(700);
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, effects, heard)
                .onSequenceBreak(OnSequenceBreak.HOLD).sequenceHoldTimeout(timeout).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 3, Duration.ofSeconds(60), () -> "applied " + c.applied());
            assertThat(c.held()).isEmpty();
        }
        assertThat(heard.breaks).singleElement().satisfies(b -> {
            assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.REORDER);
            assertThat(b.expected()).isEqualTo(3);
            assertThat(b.actual()).isEqualTo(1);
        });
        long heldFor = heard.appliedAt.get("k-1-again") - heard.lastBreakAt.get();
        assertThat(TimeUnit.NANOSECONDS.toMillis(heldFor)).as("applied only once the hold timed out")
                .isGreaterThanOrEqualTo(timeout.toMillis());
    }

    @Test
    void aBreakWhoseCommitWasAppliedThoughTheConnectionFailedDuringItIsReportedOnce() throws Exception {
        String topic = topic("seq-commit-unknown", 1);
        String effects = effects();
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        send(topic, List.of(Rec.of("k", 1), Rec.of("k", 3), Rec.of("k", 4)));
        // The second COMMIT (the gap record's) is applied, then its reply is "lost": the consumer sees it fail.
        AtomicInteger commits = new AtomicInteger();
        DataSource flaky = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {DataSource.class}, (ds, dsMethod, dsArgs) -> {
                    Object result = invoke(db, dsMethod, dsArgs);
                    if (!dsMethod.getName().equals("getConnection")) {
                        return result;
                    }
                    Connection real = (Connection) result;
                    return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class},
                            (cx, method, args) -> {
                                Object out = invoke(real, method, args);
                                if (method.getName().equals("commit") && commits.incrementAndGet() == 2) {
                                    real.close();
                                    throw new SQLRecoverableException("connection lost during COMMIT (injected)");
                                }
                                return out;
                            });
                });
        Heard heard = new Heard();
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, effects, heard).dataSource(flaky)
                .initialBackoff(Duration.ofMillis(10)).maxBackoff(Duration.ofMillis(50)).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 3, Duration.ofSeconds(60),
                    () -> c.applied() + " applied, " + c.duplicates() + " duplicates");
            assertThat(c.duplicates()).isZero();
        }
        assertThat(commits.get()).as("the injected failure happened").isGreaterThanOrEqualTo(3);
        assertThat(heard.breaks).singleElement().satisfies(b -> {
            assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.GAP);
            assertThat(b.missing()).containsExactly(2L);
        });
        assertThat(InboxTestSupport.effectCounts(db, effects)).hasSize(3).allSatisfy((v, n) -> assertThat(n)
                .as(v).isEqualTo(1));
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
