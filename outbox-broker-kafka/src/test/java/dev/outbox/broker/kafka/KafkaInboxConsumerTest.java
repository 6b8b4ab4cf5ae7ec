package dev.outbox.broker.kafka;

import dev.outbox.FailedMessage;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link KafkaInboxConsumer} on a real Kafka and a real Postgres inbox: repeats of a message id are applied once,
 * records without an id are told apart by their offset, a handler that keeps failing moves its record to the failed
 * table while the rest flow, and the database going away for a while stalls the consumer without skipping anything.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class KafkaInboxConsumerTest {
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static KafkaServer kafka;
    private static JdbcServer pg;
    private static DataSource db;

    @BeforeAll
    static void servers() {
        kafka = TestServers.kafka();
        pg = TestServers.postgres();
        db = pg.dataSource(pg.createDatabase("inbox_consumer"));
    }

    private static String name(String prefix) {
        return prefix + "_" + NAMES.incrementAndGet() + "_" + Long.toHexString(System.nanoTime() & 0xffffff);
    }

    private static KafkaInboxConsumer.Builder consumer(String topic, String group, PostgresInbox inbox,
                                                       KafkaInboxConsumer.RecordHandler handler) {
        return KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers()).groupId(group).topics(topic)
                .dataSource(db).inbox(inbox).handler(handler)
                .property("session.timeout.ms", 6000).property("heartbeat.interval.ms", 500);
    }

    @Test
    void repeatsOfAMessageIdAreAppliedOnceAndRecordsWithoutAnIdAreKnownByTheirOffset() throws Exception {
        String topic = name("inbox-dups").replace('_', '-');
        kafka.createTopic(topic, 3);
        String effects = name("effects");
        InboxTestSupport.createEffects(db, effects);
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        List<String> values = IntStream.range(0, 30).mapToObj(i -> "v" + i).toList();
        List<UUID> ids = InboxTestSupport.sendWithIds(kafka.bootstrapServers(), topic, values);
        // The outbox sending ten of them again (a crashed leader's in-flight records): same ids, new offsets.
        InboxTestSupport.sendWithIds(kafka.bootstrapServers(), topic, values.subList(0, 10), ids.subList(0, 10));
        InboxTestSupport.sendWithoutIds(kafka.bootstrapServers(), topic, List.of("plain-1", "plain-1", "plain-2"));

        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, InboxTestSupport.effectHandler(effects))
                .consumerName("billing").build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() + c.duplicates() == 43, Duration.ofSeconds(60),
                    () -> c.applied() + "/" + c.duplicates());
            assertThat(c.applied()).isEqualTo(33);
            assertThat(c.duplicates()).isEqualTo(10);
        }
        Map<String, Integer> counts = InboxTestSupport.effectCounts(db, effects);
        assertThat(counts).hasSize(32);
        assertThat(counts).as("one effect per message id").allSatisfy((v, n) -> assertThat(n)
                .as(v).isEqualTo(v.equals("plain-1") ? 2 : 1));

        // Another group under the same consumer name reads everything again: every record is known, by its id or,
        // without one, by its offset.
        try (KafkaInboxConsumer again = consumer(topic, name("group"), inbox,
                InboxTestSupport.effectHandler(effects)).consumerName("billing").build()) {
            again.start();
            Await.untilOrFail(() -> again.duplicates() == 43, Duration.ofSeconds(60),
                    () -> "duplicates " + again.duplicates());
            assertThat(again.applied()).isZero();
        }
    }

    @Test
    void aHandlerThatKeepsFailingMovesItsRecordToTheFailedTableWithTheReasonAndTheRestFlow() throws Exception {
        String topic = name("inbox-poison").replace('_', '-');
        kafka.createTopic(topic, 2);
        String effects = name("effects");
        InboxTestSupport.createEffects(db, effects);
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        List<String> values = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            values.add(i == 3 || i == 11 ? "poison-" + i : "v" + i);
        }
        List<UUID> ids = InboxTestSupport.sendWithIds(kafka.bootstrapServers(), topic, values);
        KafkaInboxConsumer.RecordHandler effect = InboxTestSupport.effectHandler(effects);
        List<Integer> attemptsSeen = new ArrayList<>();
        String group = name("group");
        try (KafkaInboxConsumer c = consumer(topic, group, inbox, (connection, record, id) -> {
            String value = new String(record.value(), StandardCharsets.UTF_8);
            effect.handle(connection, record, id); // rolled back with the failure
            if (value.startsWith("poison")) {
                throw new IllegalStateException("cannot apply " + value);
            }
        }).maxAttempts(3).initialBackoff(Duration.ofMillis(10)).maxBackoff(Duration.ofMillis(40))
                .listener(new KafkaInboxConsumer.Listener() {
                    @Override
                    public void handlerFailed(ConsumerRecord<String, byte[]> record, UUID messageId, int attempt,
                                              Throwable error) {
                        attemptsSeen.add(attempt);
                    }
                }).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 18 && c.failed() == 2, Duration.ofSeconds(60),
                    () -> c.applied() + " applied, " + c.failed() + " failed");
        }
        assertThat(attemptsSeen).containsExactlyInAnyOrder(1, 2, 3, 1, 2, 3);
        List<FailedMessage> failed = inbox.failed(group, 10);
        assertThat(failed).extracting(FailedMessage::messageId).containsExactlyInAnyOrder(ids.get(3), ids.get(11));
        assertThat(failed).allSatisfy(f -> {
            assertThat(f.reason()).contains("IllegalStateException").contains("cannot apply poison-");
            assertThat(f.attempts()).isEqualTo(3);
            assertThat(f.topic()).isEqualTo(topic);
            assertThat(new String(f.value(), StandardCharsets.UTF_8)).startsWith("poison-");
        });
        Map<String, Integer> counts = InboxTestSupport.effectCounts(db, effects);
        assertThat(counts).hasSize(18).allSatisfy((v, n) -> assertThat(n).isEqualTo(1))
                .doesNotContainKeys("poison-3", "poison-11");
    }

    @Test
    void theDatabaseUnreachableForAWhileStallsTheConsumerAndNothingIsSkipped() throws Exception {
        String topic = name("inbox-dbdown").replace('_', '-');
        kafka.createTopic(topic, 2);
        String effects = name("effects");
        InboxTestSupport.createEffects(db, effects);
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        AtomicInteger outages = new AtomicInteger();
        try (KafkaInboxConsumer c = consumer(topic, name("group"), inbox, InboxTestSupport.effectHandler(effects))
                .initialBackoff(Duration.ofMillis(50)).maxBackoff(Duration.ofMillis(500))
                .listener(new KafkaInboxConsumer.Listener() {
                    @Override
                    public void databaseUnavailable(Throwable error) {
                        outages.incrementAndGet();
                    }
                }).build()) {
            c.start();
            InboxTestSupport.sendWithIds(kafka.bootstrapServers(), topic,
                    IntStream.range(0, 20).mapToObj(i -> "a" + i).toList());
            Await.untilOrFail(() -> c.applied() == 20, Duration.ofSeconds(60), () -> "applied " + c.applied());

            pg.stop();
            try {
                InboxTestSupport.sendWithIds(kafka.bootstrapServers(), topic,
                        IntStream.range(0, 20).mapToObj(i -> "b" + i).toList());
                Await.untilOrFail(() -> outages.get() >= 3, Duration.ofSeconds(30),
                        () -> "outages " + outages.get());
                assertThat(c.applied()).as("nothing applied while the database is away").isEqualTo(20);
                assertThat(c.failed()).as("nothing given up on").isZero();
            } finally {
                pg.restart();
            }
            Await.untilOrFail(() -> c.applied() == 40, Duration.ofSeconds(60), () -> "applied " + c.applied());
            assertThat(c.failure()).isNull();
        }
        Map<String, Integer> counts = InboxTestSupport.effectCounts(db, effects);
        assertThat(counts).hasSize(40).allSatisfy((v, n) -> assertThat(n).as(v).isEqualTo(1));
    }

    @Test
    void aRebalanceCommitsWhatIsDoneAndNothingMore() throws Exception {
        String topic = name("inbox-rebalance").replace('_', '-');
        kafka.createTopic(topic, 4);
        String effects = name("effects");
        InboxTestSupport.createEffects(db, effects);
        PostgresInbox inbox = InboxTestSupport.inbox(db, name("inbox"));
        int records = 2_000;
        InboxTestSupport.sendWithIds(kafka.bootstrapServers(), topic,
                IntStream.range(0, records).mapToObj(i -> "r" + i).toList());
        String group = name("group");
        KafkaInboxConsumer.RecordHandler apply = InboxTestSupport.effectHandler(effects);
        // Until the second member has applied a record of its own (it was given partitions), the first applies at
        // most one record per 20 ms and fetches 10 at a time: on a fast machine it would otherwise apply all
        // 2,000 before the second joins, and there would be nothing to take over.
        CountDownLatch secondApplies = new CountDownLatch(1);
        KafkaInboxConsumer.RecordHandler paced = (connection, record, messageId) -> {
            secondApplies.await(20, TimeUnit.MILLISECONDS);
            apply.handle(connection, record, messageId);
        };
        KafkaInboxConsumer.RecordHandler signalling = (connection, record, messageId) -> {
            apply.handle(connection, record, messageId);
            secondApplies.countDown();
        };
        try (KafkaInboxConsumer first = consumer(topic, group, inbox, paced).consumerName("rebalance")
                .property("max.poll.records", 10).build()) {
            first.start();
            Await.untilOrFail(() -> first.applied() >= 100, Duration.ofSeconds(60),
                    () -> "first applied " + first.applied());
            // A second member joins while the first holds fetched, unprocessed records of every partition: the
            // revoked partitions' offsets must cover what is applied and no more, or their records would be lost.
            try (KafkaInboxConsumer second = consumer(topic, group, inbox, signalling)
                    .consumerName("rebalance").build()) {
                second.start();
                Await.untilOrFail(() -> first.applied() + second.applied() == records, Duration.ofSeconds(90),
                        () -> first.applied() + " + " + second.applied() + " applied");
                assertThat(second.applied()).as("the second member took over partitions").isPositive();
            }
        }
        Map<String, Integer> counts = InboxTestSupport.effectCounts(db, effects);
        assertThat(counts).hasSize(records).allSatisfy((v, n) -> assertThat(n).as(v).isEqualTo(1));
    }

    @Test
    void badSettingsAreRejectedNamingThem() {
        PostgresInbox inbox = PostgresInbox.builder(db).build();
        KafkaInboxConsumer.Builder ok = consumer("t", "g", inbox, (c, r, id) -> {
        });
        assertThatThrownBy(() -> consumer("t", "g", inbox, (c, r, id) -> {
        }).property("enable.auto.commit", "true").build()).hasMessageContaining("enable.auto.commit");
        assertThatThrownBy(() -> consumer("t", "g", inbox, (c, r, id) -> {
        }).property("value.deserializer", "x").build()).hasMessageContaining("value.deserializer");
        assertThatThrownBy(() -> KafkaInboxConsumer.builder().bootstrapServers("x:1").groupId("g").dataSource(db)
                .inbox(inbox).handler((c, r, id) -> {
                }).build()).hasMessageContaining("topics");
        assertThatThrownBy(() -> ok.maxAttempts(0)).hasMessageContaining("maxAttempts");
        assertThatThrownBy(() -> ok.topics("bad topic")).hasMessageContaining("bad topic");
        assertThatThrownBy(() -> ok.initialBackoff(Duration.ofSeconds(10)).build())
                .hasMessageContaining("maxBackoff");
    }
}
