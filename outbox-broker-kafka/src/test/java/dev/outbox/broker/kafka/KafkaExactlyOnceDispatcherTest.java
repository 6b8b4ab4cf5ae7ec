package dev.outbox.broker.kafka;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryCommitLog;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.InMemoryStreamStore;
import dev.outbox.testkit.StoreFaults;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The duplicate exactly-once publishing removes, with the dispatcher: a leader whose every purge fails (its database
 * connection for writes is gone) has Kafka commit all of its records (one per key: a key's next record waits for
 * its purge) and the table keep all of its rows when it closes; its successor, on the same rows and the same transactional id, harvests them again. With
 * {@code exactlyOnce()} the successor's broker acknowledges them without sending, so a {@code read_committed}
 * consumer sees each record once and the table ends empty; without it, each record twice.
 */
class KafkaExactlyOnceDispatcherTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int RECORDS = 200;
    private static KafkaServer kafka;

    @BeforeAll
    static void kafka() {
        kafka = TestServers.kafka();
    }

    @ParameterizedTest(name = "exactlyOnce={0}")
    @ValueSource(booleans = {true, false})
    void aSuccessorDoesNotPublishAgainWhatItsPredecessorCouldNotPurge(boolean exactlyOnce) throws Exception {
        String topic = "eos-engine-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        String id = "eos-engine-" + topic;
        InMemoryStore rows = new InMemoryStore();
        Publisher publisher = rows.publisher();
        for (int i = 0; i < RECORDS; i++) {
            try (InMemoryStore.Transaction tx = rows.begin()) {
                tx.write(OutboxMessage.of(topic, "key-" + i, "v" + i)); // a key moves on only after a purge
                tx.commit();
            }
        }
        publisher.committed();
        DispatcherConfig config = DispatcherConfig.builder().ioErrorBackoff(Duration.ofMillis(50))
                .maxIoErrorBackoff(Duration.ofMillis(200)).drainTimeout(Duration.ofSeconds(1)).build();

        NoPurges failing = new NoPurges(rows);
        try (KafkaMessageBroker broker = broker(id, exactlyOnce);
             Dispatcher first = Dispatcher.builder(failing, broker).config(config).name("first").build()) {
            first.start();
            Await.untilOrFail(() -> broker.committedTransactions() > 0 && failing.attempts > 0
                    && KafkaReader.readToEnd(kafka.bootstrapServers(), topic, WAIT).size() >= RECORDS, WAIT,
                    () -> "every record committed in Kafka by the first leader");
        }
        assertThat(rows.size()).as("the first leader purged nothing").isEqualTo(RECORDS);

        try (KafkaMessageBroker broker = broker(id, exactlyOnce);
             Dispatcher second = Dispatcher.builder(rows, broker).config(config).name("second").build()) {
            second.start();
            Await.untilOrFail(() -> rows.size() == 0, WAIT, () -> rows.size() + " rows left");
            assertThat(broker.recordsPublishedBefore()).isEqualTo(exactlyOnce ? RECORDS : 0);
        }
        int expected = exactlyOnce ? RECORDS : 2 * RECORDS;
        assertThat(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, expected, WAIT))
                .as("records a read_committed consumer sees").hasSize(expected);
    }

    /**
     * The same with the stream harvest (the WAL harvest's model: {@link InMemoryStreamStore} over one commit log, a
     * process each): the first leader's ledger appends all fail, so the log confirms nothing; the successor, a new
     * process, streams every message again under ids of its own (a stream numbers per leader) and its broker matches
     * them by message id. With {@code exactlyOnce()} each record is published once; without it, twice.
     */
    @ParameterizedTest(name = "exactlyOnce={0}")
    @ValueSource(booleans = {true, false})
    void withTheStreamHarvestASuccessorMatchesWhatItsPredecessorPublishedByMessageId(boolean exactlyOnce)
            throws Exception {
        String topic = "eos-stream-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        String id = "eos-stream-" + topic;
        InMemoryCommitLog log = new InMemoryCommitLog(Clock.systemUTC());
        InMemoryStreamStore first = new InMemoryStreamStore(log, "first", Clock.systemUTC(), Duration.ofSeconds(1));
        int[] failedAppends = new int[1];
        first.setFaults(op -> {
            if (op == StoreFaults.Operation.PURGE) {
                failedAppends[0]++;
                return StoreFaults.Fault.failBefore();
            }
            return StoreFaults.Fault.NONE;
        });
        for (int i = 0; i < RECORDS; i++) {
            first.publisher().publish(null, List.of(OutboxMessage.of(topic, "key-" + i, "v" + i)));
        }
        DispatcherConfig config = DispatcherConfig.builder().ioErrorBackoff(Duration.ofMillis(50))
                .maxIoErrorBackoff(Duration.ofMillis(200)).drainTimeout(Duration.ofSeconds(1)).build();
        try (KafkaMessageBroker broker = broker(id, exactlyOnce);
             Dispatcher d = Dispatcher.builder(first, broker).config(config).name("first").build()) {
            d.start();
            Await.untilOrFail(() -> broker.committedTransactions() > 0 && failedAppends[0] > 0
                    && KafkaReader.readToEnd(kafka.bootstrapServers(), topic, WAIT).size() >= RECORDS, WAIT,
                    () -> "every record committed in Kafka by the first leader");
        }
        assertThat(first.backlog()).as("the log confirmed nothing").isEqualTo(RECORDS);

        InMemoryStreamStore second = new InMemoryStreamStore(log, "second", Clock.systemUTC(), Duration.ofSeconds(1));
        try (KafkaMessageBroker broker = broker(id, exactlyOnce);
             Dispatcher d = Dispatcher.builder(second, broker).config(config).name("second").build()) {
            d.start();
            Await.untilOrFail(() -> second.backlog() == 0, WAIT, () -> second.backlog() + " messages left");
            assertThat(broker.recordsPublishedBefore()).isEqualTo(exactlyOnce ? RECORDS : 0);
        }
        int expected = exactlyOnce ? RECORDS : 2 * RECORDS;
        assertThat(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, expected, WAIT))
                .as("records a read_committed consumer sees").hasSize(expected);
    }

    private static KafkaMessageBroker broker(String id, boolean exactlyOnce) {
        KafkaMessageBroker.Builder b = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .transactionalId(id);
        return (exactlyOnce ? b.exactlyOnce("progress-" + id) : b).build();
    }

    /** The store with a purge that always fails retriably; unfenced, so every purge goes through it. */
    private static final class NoPurges implements Store {
        private final InMemoryStore store;
        volatile int attempts;

        NoPurges(InMemoryStore store) {
            this.store = store;
        }

        @Override
        public Publisher publisher() {
            return store.publisher();
        }

        @Override
        public void purge(Collection<Long> ids) {
            attempts++;
            throw new StoreException("purges fail in this test", null, true);
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
            store.retryLater(nextAttempts);
        }

        @Override
        public void park(Map<Long, String> reasons) {
            store.park(reasons);
        }

        @Override
        public <T> Optional<T> capability(Class<T> type) {
            return type == StorageFencing.class ? Optional.empty() : store.capability(type);
        }
    }
}
