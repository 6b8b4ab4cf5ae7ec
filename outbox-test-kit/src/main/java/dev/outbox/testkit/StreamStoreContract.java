package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.internal.StreamStore;
import dev.outbox.spi.CommitLog;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The harvest cases of {@link StoreContract} for a store whose outbox is a {@link CommitLog} (the Postgres store's WAL
 * harvest) instead of a table, driven through the dispatcher's own stream harvest: what a read, a purge, a failure
 * record, a park, a replay, the backlog and a stop of the harvest must do there. A stream has no rows to mark and ids that
 * the store gives in commit order, so the table's cases about marks, leader ids, gaps below the cursor and rows
 * written by hand do not apply; the ones below replace them.
 *
 * <pre>{@code
 * class PostgresWalStoreContractTest extends StreamStoreContract {
 *     protected Store createStore() { ... a WAL-harvested store of a fresh outbox (its own slot) ... }
 *     protected TestTransaction begin(Store store) { return JdbcTestTransaction.begin(dataSource, store.publisher()); }
 *     protected void disposeStore(Store store) { ... drop the slot ... }
 * }
 * }</pre>
 *
 * <p>A read may return before a message committed just now has arrived from the stream: the suite reads until what
 * it expects is there, for up to {@link #ARRIVAL}.
 */
public abstract class StreamStoreContract {
    /** The topic of the suite's messages. */
    protected static final String TOPIC = "outbox-stream-contract";
    /** How long a committed message may take to arrive from the stream. */
    protected static final Duration ARRIVAL = Duration.ofSeconds(30);

    /**
     * The store under test in the current test, as the dispatcher harvests it: {@link #createStore()}'s store seen
     * through the engine's stream harvest ({@code dev.outbox.internal.StreamStore}), so that the suite drives the
     * store's {@link CommitLog} exactly as a dispatcher does.
     */
    protected Store store;
    /** What {@link #createStore()} returned for the current test. */
    private Store source;

    /**
     * A fresh store harvested from the stream of a fresh, empty outbox, for one test. Called before each test.
     *
     * @return the store under test: with a {@link CommitLog} and no cursor read or mark of its own, over an outbox
     *         (and stream position) no other test uses
     */
    protected abstract Store createStore();

    /**
     * Begins an application transaction whose messages {@code store}'s publisher writes.
     *
     * @param store the store under test
     * @return a new open transaction; the suite commits, rolls back or closes it, possibly while others are open
     */
    protected abstract TestTransaction begin(Store store);

    /**
     * Releases what {@link #createStore()} created (a replication slot, a table). Called after each test, once the
     * harvest was stopped ({@code harvestStopped()}). Default: nothing.
     *
     * @param store the store {@link #createStore()} returned for the test
     */
    protected void disposeStore(Store store) {
    }

    @BeforeEach
    final void createFreshStore() {
        source = createStore();
        assertThat(source).as("createStore()").isNotNull();
        assertThat(source.capability(CommitLog.class)).as("a CommitLog").isPresent();
        assertThat(source.capability(dev.outbox.spi.CursorHarvest.class)).as("no cursor read of its own: the"
                + " dispatcher's stream harvest reads it").isEmpty();
        assertThat(source.capability(dev.outbox.spi.MarkHarvest.class)).as("no mark: a stream has no rows to mark")
                .isEmpty();
        store = StreamStore.of(source);
    }

    @AfterEach
    final void disposeFreshStore() {
        if (store != null) {
            Capabilities.reading(store).harvestStopped();
            disposeStore(source);
        }
    }

    // ---- helpers ------------------------------------------------------------------------------------------

    /**
     * A message of the suite's topic.
     *
     * @param key   its key, {@code null} for none
     * @param value its value, encoded as UTF-8
     * @return a message to {@link #TOPIC} without headers
     */
    protected static OutboxMessage msg(String key, String value) {
        return OutboxMessage.of(TOPIC, key, value);
    }

    /**
     * Writes {@code messages} in one transaction of {@link #begin} and commits it.
     *
     * @param messages the messages, in the order written; none {@code null}
     */
    protected void commit(OutboxMessage... messages) {
        try (TestTransaction tx = begin(store)) {
            tx.publish(List.of(messages));
            tx.commit();
        }
    }

    /**
     * A record's value as text.
     *
     * @param r a record read from the store, not a tombstone
     * @return its value decoded as UTF-8
     */
    protected String valueOf(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }

    /**
     * Reads above {@code after} until the read satisfies {@code done}, for up to {@link #ARRIVAL}, reading again
     * at once after each read that does not.
     *
     * @param after the cursor: records with ids above it are read
     * @param limit the most records per read
     * @param done  whether a read is what the test waits for
     * @param what  what is awaited, for the failure's message ("3 records read")
     * @return the first read that satisfied {@code done}
     * @throws AssertionError if no read did within {@link #ARRIVAL}
     */
    protected ReadResult readUntil(long after, int limit, Predicate<ReadResult> done, String what) {
        long deadline = System.nanoTime() + ARRIVAL.toNanos();
        ReadResult r = Capabilities.reading(store).read(after, List.of(), limit);
        while (!done.test(r)) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("after " + ARRIVAL + ", still not " + what + "; the last read returned "
                        + values(r));
            }
            r = Capabilities.reading(store).read(after, List.of(), limit);
        }
        return r;
    }

    /**
     * Reads from the head until {@code count} records are pending, and returns them.
     *
     * @param count the number of records awaited, zero or more
     * @return the records of the first read that returned at least {@code count} (more if more were pending),
     *         as it returned them
     * @throws AssertionError if fewer than {@code count} arrived within {@link #ARRIVAL}
     */
    protected List<OutboxRecord> readAll(int count) {
        return readUntil(0, Math.max(count, 1) + 10, r -> r.rows().records().size() >= count,
                count + " records read").rows().records();
    }

    /**
     * The values of a read's records, as text.
     *
     * @param r a read of the store
     * @return each record's value decoded as UTF-8, in the read's order
     */
    protected List<String> values(ReadResult r) {
        List<String> out = new ArrayList<>();
        r.rows().records().forEach(x -> out.add(valueOf(x)));
        return out;
    }

    private static List<Long> ids(List<OutboxRecord> records) {
        return records.stream().map(OutboxRecord::id).toList();
    }

    // ---- reading ------------------------------------------------------------------------------------------

    @Test
    void aCommittedMessageIsReadWithAllItsFields() {
        OutboxMessage message = StoreContract.messageWithEveryKindOfHeader(TOPIC);
        Instant before = Instant.now().minusSeconds(120);
        commit(message);
        OutboxRecord r = readAll(1).get(0);
        assertThat(r.message()).isEqualTo(message);
        assertThat(r.attempts()).isZero();
        assertThat(r.nextAttemptAt()).isNull();
        assertThat(r.createdAt()).as("its commit time").isAfter(before).isBefore(Instant.now().plusSeconds(120));
        assertThat(r.messageId()).as("the message id consumers see").isNotNull();
    }

    @Test
    void readsReturnMessagesInCommitOrderAboveTheCursorUpToTheLimitAndChangeNothing() {
        for (int i = 0; i < 5; i++) {
            commit(msg("k" + (i % 2), "v" + i));
        }
        List<OutboxRecord> all = readAll(5);
        assertThat(all).extracting(this::valueOf).containsExactly("v0", "v1", "v2", "v3", "v4");
        assertThat(ids(all)).isSorted().doesNotHaveDuplicates();
        ReadResult first = Capabilities.reading(store).read(0, List.of(), 3);
        assertThat(values(first)).containsExactly("v0", "v1", "v2");
        assertThat(values(Capabilities.reading(store).read(first.maxId(), List.of(), 10))).containsExactly("v3", "v4");
        assertThat(values(Capabilities.reading(store).read(0, List.of(), 10))).as("a read changes nothing: the same messages again")
                .containsExactly("v0", "v1", "v2", "v3", "v4");
        assertThat(Capabilities.reading(store).read(all.get(4).id(), List.of(), 10).rows().isEmpty()).isTrue();
        assertThat(Capabilities.gauges(store).backlog()).as("pending: received and not finished").isEqualTo(5);
    }

    @Test
    void anUncommittedMessageIsNeverReadARolledBackOneNeverAndALateCommitComesInCommitOrder() {
        try (TestTransaction early = begin(store)) {
            early.publish(msg("late", "written first, committed last"));
            try (TestTransaction rolledBack = begin(store)) {
                rolledBack.publish(msg("k", "rolled back"));
                rolledBack.rollback();
            }
            commit(msg("other", "committed first"));
            ReadResult r = readUntil(0, 10, x -> !x.rows().isEmpty(), "the committed message read");
            assertThat(values(r)).as("the open writer's message is not read").containsExactly("committed first");
            early.commit();
        }
        List<OutboxRecord> all = readAll(2);
        assertThat(all).extracting(this::valueOf).as("in commit order, after the message committed before it")
                .containsExactly("committed first", "written first, committed last");
        assertThat(all.get(1).id()).isGreaterThan(all.get(0).id());
    }

    @Test
    void readRejectsALimitBelowOneAndNullRanges() {
        StoreContract.assertReadRejectsBadArguments(store);
    }

    // ---- finishing ----------------------------------------------------------------------------------------

    @Test
    void purgedMessagesAreNotReadAgainNorDeliveredAgainByTheNextStream() {
        for (int i = 0; i < 6; i++) {
            commit(msg("k" + i, "v" + i));
        }
        List<OutboxRecord> all = readAll(6);
        store.purge(List.of(all.get(0).id(), all.get(1).id(), all.get(4).id(), 999_999_999L));
        assertThat(values(Capabilities.reading(store).read(0, List.of(), 10))).containsExactly("v2", "v3", "v5");
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);
        store.purge(List.of());

        Capabilities.reading(store).harvestStopped(); // a new leader, or this one again: a new stream, from what was confirmed
        List<OutboxRecord> again = readAll(3);
        assertThat(again).extracting(this::valueOf).as("what was not finished, and only that")
                .containsExactly("v2", "v3", "v5");
        assertThat(again).extracting(OutboxRecord::messageId).as("the same message ids")
                .containsExactly(all.get(2).messageId(), all.get(3).messageId(), all.get(5).messageId());
        store.purge(ids(again));
        commit(msg("k", "after"));
        assertThat(values(readUntil(0, 10, x -> !x.rows().isEmpty(), "the next message read")))
                .containsExactly("after");
    }

    @Test
    void aFailedDeliveryIsReadAgainWithItsAttemptsAndNextAttemptTime() {
        commit(msg("k", "failed once"));
        OutboxRecord r = readAll(1).get(0);
        Instant next = Instant.now().plusSeconds(60).truncatedTo(ChronoUnit.MILLIS);
        store.retryLater(Map.of(r.id(), next));
        OutboxRecord again = Capabilities.reading(store).read(0, List.of(), 10).rows().records().get(0);
        assertThat(again.id()).isEqualTo(r.id());
        assertThat(again.attempts()).isEqualTo(1);
        assertThat(again.nextAttemptAt()).isEqualTo(next);
        assertThat(again.messageId()).isEqualTo(r.messageId());
    }

    @Test
    void aParkedMessageLeavesTheStreamForTheParkedTableAndAReplayPublishesItAgain() {
        commit(msg("k", "parked"), msg("k", "kept"));
        List<OutboxRecord> all = readAll(2);
        store.park(Map.of(all.get(0).id(), "parked by the contract"));
        assertThat(values(Capabilities.reading(store).read(0, List.of(), 10))).containsExactly("kept");
        assertThat(Capabilities.gauges(store).parkedCount()).isEqualTo(1);
        List<ParkedRecord> parked = Capabilities.parkedRecords(store).parked(10);
        assertThat(parked).hasSize(1);
        assertThat(parked.get(0).reason()).contains("parked by the contract");
        assertThat(parked.get(0).topic()).isEqualTo(TOPIC);
        assertThat(parked.get(0).key()).isEqualTo("k");

        store.purge(List.of(all.get(1).id()));
        assertThat(Capabilities.parkedRecords(store).replay(List.of(parked.get(0).id()))).isEqualTo(1);
        assertThat(Capabilities.gauges(store).parkedCount()).isZero();
        OutboxRecord replayed = readUntil(0, 10, x -> !x.rows().isEmpty(), "the replayed message read")
                .rows().records().get(0);
        assertThat(replayed.message()).as("the parked message, marked as replayed with its parked id")
                .isEqualTo(all.get(0).message().withHeader(dev.outbox.Header.of(dev.outbox.KeySequence.REPLAYED,
                        dev.outbox.KeySequence.encode(parked.get(0).id()))));
        assertThat(replayed.messageId()).as("a replay keeps the message id").isEqualTo(all.get(0).messageId());
        assertThat(replayed.attempts()).isZero();
    }

    @Test
    void largeBatchesAreReadAndFinishedInFullInCommitOrder() {
        int n = 5_000;
        try (TestTransaction tx = begin(store)) {
            List<OutboxMessage> batch = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                batch.add(msg("k" + (i % 97), "v" + i));
            }
            tx.publish(batch);
            tx.commit();
        }
        List<OutboxRecord> all = readUntil(0, n, r -> r.rows().records().size() == n, n + " records read")
                .rows().records();
        for (int i = 0; i < n; i++) {
            assertThat(valueOf(all.get(i))).isEqualTo("v" + i);
        }
        store.purge(ids(all));
        assertThat(Capabilities.gauges(store).backlog()).isZero();
        MarkResult rest = Capabilities.reading(store).read(0, List.of(), 10).rows();
        assertThat(rest.isEmpty()).isTrue();
    }
}
