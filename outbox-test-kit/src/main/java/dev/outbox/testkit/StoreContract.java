package dev.outbox.testkit;

import dev.outbox.Header;
import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreFencedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The contract of the {@link Store} port, as a JUnit 5 suite that every store runs against a real database:
 * marking in id order and by leader id, stealing rows of another leader, uncommitted and rolled-back rows,
 * purge/reset/park/replay of id batches, tombstones, headers, unreadable rows, the statistics a leader samples
 * (backlog, parked count, creation time of the head), large batches and concurrent writers.
 *
 * <p>Extend it and implement the hooks:
 * <pre>{@code
 * class PostgresStoreContractTest extends StoreContract {
 *     protected Store createStore() { ... a store over a fresh, empty table ... }
 *     protected TestTransaction begin(Store store) { return JdbcTestTransaction.begin(dataSource, store.publisher()); }
 *     protected Store createStore(int maxKeyLength) { ... the same, with that maxKeyLength ... }
 *     protected void insertMalformedRow(Store store, String topic, String key) { ... raw SQL ... }
 *     protected void insertRow(Store store, String topic, String key, int attempts) { ... raw SQL ... }
 * }
 * }</pre>
 *
 * <p>Each test gets a fresh store from {@link #createStore()} and hands it to {@link #disposeStore(Store)}
 * afterwards. Each test is bounded by a timeout, so a call that blocks fails the test instead of hanging the
 * build. Tests are not run concurrently with each other.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class StoreContract {
    /** The topic most contract messages go to. */
    protected static final String TOPIC = "outbox-contract";
    /** How far a store's timestamps may be from this JVM's clock (the database may run elsewhere). */
    protected static final Duration CLOCK_SLACK = Duration.ofMinutes(2);
    private static final long UNKNOWN_ID = 999_999_999L;

    /** The store under test in the current test. */
    protected Store store;

    /**
     * A fresh store over an empty outbox, for one test. Called before each test.
     *
     * @return the store under test, not {@code null}, over an outbox no other test uses, with the store's
     *         default key length
     */
    protected abstract Store createStore();

    /**
     * A fresh store over an empty outbox whose longest key is {@code maxKeyLength} code points; the test disposes of
     * it with {@link #disposeStore(Store)}.
     *
     * @param maxKeyLength the longest key the store accepts, in Unicode code points (the suite asks small values,
     *                     such as 4)
     * @return a second store, besides {@link #store}, over an empty outbox of its own
     */
    protected abstract Store createStore(int maxKeyLength);

    /**
     * Begins an application transaction whose messages {@code store}'s publisher writes.
     *
     * @param store the store under test, or one from {@link #createStore(int)}
     * @return a new open transaction; the suite commits, rolls back or closes it, possibly with others open at
     *         the same time and from several threads (one thread per transaction)
     */
    protected abstract TestTransaction begin(Store store);

    /**
     * Writes and commits, bypassing the publisher, a row that {@code store} cannot read as a message (for an
     * SQL store, for example, header name and value arrays of different lengths written by raw SQL), with the
     * given topic and key. The row must take its id from the same sequence as published rows.
     *
     * @param store the store whose outbox gets the row
     * @param topic the row's topic, a valid one
     * @param key   the row's key, {@code null} for none
     */
    protected abstract void insertMalformedRow(Store store, String topic, String key);

    /**
     * Writes and commits, bypassing the publisher and its checks (as another language writing the table with plain
     * SQL would), a row with the given topic, key and attempts, the value {@code "x"} and no headers. The row must
     * take its id from the same sequence as published rows.
     *
     * @param store    the store whose outbox gets the row
     * @param topic    the topic to store as it is, possibly invalid (blank, too long, illegal characters)
     * @param key      the key to store as it is, possibly longer than the store's maximum
     * @param attempts the attempts to store, possibly negative
     */
    protected abstract void insertRow(Store store, String topic, String key, int attempts);

    /**
     * Releases what {@link #createStore()} created (drops a table, closes a pool). Called after each test, and
     * for each store of {@link #createStore(int)}. Default: nothing.
     *
     * @param store a store the suite created through one of the two {@code createStore} methods
     */
    protected void disposeStore(Store store) {
    }

    @BeforeEach
    final void createFreshStore() {
        store = createStore();
        assertThat(store).as("createStore()").isNotNull();
    }

    @AfterEach
    final void disposeFreshStore() {
        if (store != null) {
            disposeStore(store);
        }
    }

    // ---- round trip ---------------------------------------------------------------------------------------

    /**
     * A message to {@code topic} with every kind of header: a repeated name, a null value, binary bytes (both
     * contracts' round trip).
     */
    static OutboxMessage messageWithEveryKindOfHeader(String topic) {
        return OutboxMessage.builder(topic, "key-1")
                .value("value-1")
                .header("trace", "abc")
                .header("empty", (byte[]) null)
                .header("trace", "def")
                .header("binary", new byte[]{0, -1, 127, -128})
                .build();
    }

    @Test
    void writtenMessageIsMarkedWithAllItsFields() {
        OutboxMessage message = messageWithEveryKindOfHeader(TOPIC);
        Instant before = Instant.now();
        commit(message);
        Instant after = Instant.now();
        UUID leader = UUID.randomUUID();

        MarkResult result = Capabilities.marking(store).mark(leader, 10);

        assertThat(result.rejected()).isEmpty();
        assertThat(result.records()).hasSize(1);
        OutboxRecord record = result.records().get(0);
        assertThat(record.message()).isEqualTo(message);
        assertThat(record.topic()).isEqualTo(TOPIC);
        assertThat(record.key()).isEqualTo("key-1");
        assertThat(new String(record.message().value(), StandardCharsets.UTF_8)).isEqualTo("value-1");
        assertThat(record.message().headers()).extracting(Header::name)
                .containsExactly("trace", "empty", "trace", "binary");
        assertThat(record.message().headers()).extracting(Header::valueAsString)
                .containsExactly("abc", null, "def", new String(new byte[]{0, -1, 127, -128},
                        StandardCharsets.UTF_8));
        assertThat(record.message().headers().get(3).value()).containsExactly(0, -1, 127, -128);
        assertThat(record.attempts()).isZero();
        assertThat(record.leaderId()).isEqualTo(leader);
        assertThat(record.createdAt()).isBetween(before.minus(CLOCK_SLACK), after.plus(CLOCK_SLACK));
    }

    @Test
    void tombstoneStaysNullAndEmptyValueStaysEmpty() {
        commit(OutboxMessage.tombstone(TOPIC, "gone"));
        commit(OutboxMessage.of(TOPIC, "empty", new byte[0]));

        List<OutboxRecord> records = markAll(UUID.randomUUID());

        assertThat(records).hasSize(2);
        assertThat(records.get(0).key()).isEqualTo("gone");
        assertThat(records.get(0).message().isTombstone()).as("tombstone").isTrue();
        assertThat(records.get(0).message().value()).isNull();
        assertThat(records.get(1).key()).isEqualTo("empty");
        assertThat(records.get(1).message().isTombstone()).as("empty value is not a tombstone").isFalse();
        assertThat(records.get(1).message().value()).isEmpty();
    }

    @Test
    void binaryValuesUnicodeKeysAndManyTopicsRoundTrip() {
        byte[] everyByte = new byte[256];
        for (int i = 0; i < everyByte.length; i++) {
            everyByte[i] = (byte) i;
        }
        OutboxMessage binary = OutboxMessage.of(TOPIC, "bytes", everyByte);
        OutboxMessage unicode = OutboxMessage.of("other.topic-1_x", "ключ-κλειδί-鍵-🔑", "ünïcödé 🎉");
        OutboxMessage noHeaders = OutboxMessage.of(TOPIC, "", "empty key");
        commit(binary, unicode, noHeaders);

        List<OutboxRecord> records = markAll(UUID.randomUUID());

        assertThat(records).extracting(OutboxRecord::message).containsExactly(binary, unicode, noHeaders);
        assertThat(records.get(2).message().headers()).isEmpty();
    }

    @Test
    void headersRoundTripByteForByteInOrderEvenAThousandOfThem() {
        byte[] notUtf8 = {(byte) 0xC3, (byte) 0x28, (byte) 0xFF, (byte) 0xFE, 0, (byte) 0x80, (byte) 0xED,
                (byte) 0xA0, (byte) 0x80};
        OutboxMessage odd = OutboxMessage.builder(TOPIC, "odd")
                .header("not-utf-8", notUtf8)
                .header("zero-bytes", new byte[0])
                .header("null", (byte[]) null)
                .header("ünï 🎉 \"quoted\" \\ back", "v")
                .build();
        OutboxMessage.Builder many = OutboxMessage.builder(TOPIC, "many");
        for (int i = 0; i < 1_000; i++) {
            many.header("h" + (i % 7), i % 10 == 0 ? null : ("value-" + i).getBytes(StandardCharsets.UTF_8));
        }
        OutboxMessage thousand = many.build();
        commit(odd, thousand);

        List<OutboxRecord> records = markAll(UUID.randomUUID());

        assertThat(records).extracting(OutboxRecord::message).containsExactly(odd, thousand);
        assertThat(records.get(0).message().headers().get(0).value()).containsExactly(notUtf8);
        assertThat(records.get(0).message().headers().get(1).value()).isEmpty();
        assertThat(records.get(0).message().headers().get(2).value()).isNull();
        assertThat(records.get(1).message().headers()).hasSize(1_000);
        assertThatThrownBy(() -> Header.of("", new byte[]{1}))
                .as("an empty header name never reaches a store").isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aKeyOfExactlyMaxKeyLengthCodePointsOutsideTheBmpIsAcceptedAndOneMoreIsNot() {
        String four = "🔑😀𝄞🎉"; // four code points, eight UTF-16 units
        String five = four + "🐘";
        Store small = createStore(4);
        try {
            try (TestTransaction tx = begin(small)) {
                tx.publish(OutboxMessage.of(TOPIC, four, "published"));
                assertThatThrownBy(() -> tx.publish(OutboxMessage.of(TOPIC, five, "too long")))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("maxKeyLength 4");
                tx.commit();
            }
            insertRow(small, TOPIC, four, 0);
            insertRow(small, TOPIC, five, 0);

            MarkResult result = Capabilities.marking(small).mark(UUID.randomUUID(), 10);

            assertThat(result.records()).extracting(OutboxRecord::key).containsExactly(four, four);
            assertThat(result.rejected()).hasSize(1);
            assertThat(result.rejected().get(0).key()).isEqualTo(five);
            assertThat(result.rejected().get(0).reason()).contains("5 characters", "maxKeyLength 4");
        } finally {
            disposeStore(small);
        }
    }

    @Test
    void rowsWrittenByHandWithNegativeAttemptsOrABadTopicAreRejectedAndDoNotStallOtherRows() {
        insertRow(store, TOPIC, "negative", -1);
        insertRow(store, TOPIC, "fine", 2);
        insertRow(store, "has space", "bad-topic", 0);
        insertRow(store, "", "empty-topic", 0);

        MarkResult result = Capabilities.marking(store).mark(UUID.randomUUID(), 10);

        assertThat(result.rejected()).extracting(MarkResult.Rejected::key)
                .containsExactly("negative", "bad-topic", "empty-topic");
        MarkResult.Rejected negative = result.rejected().get(0);
        assertThat(negative.reason()).contains("attempts", "-1");
        assertThat(negative.attempts()).isZero();
        assertThat(result.rejected().get(1).reason()).contains("'has space'");
        assertThat(result.rejected().get(2).reason()).contains("topic must not be blank");
        assertThat(result.records()).extracting(OutboxRecord::key).containsExactly("fine");
        assertThat(result.records().get(0).attempts()).isEqualTo(2);
    }

    @Test
    void messagesOfOneBatchTakeAscendingIdsInListOrder() {
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            batch.add(OutboxMessage.of(TOPIC, i % 2 == 0 ? "even" : "odd", "v" + i));
        }
        try (TestTransaction tx = begin(store)) {
            tx.publish(batch);
            tx.commit();
        }

        List<OutboxRecord> records = markAll(UUID.randomUUID());

        assertThat(records).extracting(OutboxRecord::message).containsExactlyElementsOf(batch);
        assertAscendingIds(records);
    }

    // ---- marking ------------------------------------------------------------------------------------------

    @Test
    void markTakesTheOldestRowsInIdOrderUpToTheLimit() {
        for (int i = 0; i < 10; i++) {
            commit(OutboxMessage.of(TOPIC, "k" + (i % 3), "v" + i));
        }
        UUID leader = UUID.randomUUID();

        List<OutboxRecord> first = Capabilities.marking(store).mark(leader, 3).records();
        List<OutboxRecord> second = Capabilities.marking(store).mark(leader, 3).records();
        List<OutboxRecord> rest = Capabilities.marking(store).mark(leader, 10).records();

        assertThat(first).extracting(this::valueOf).containsExactly("v0", "v1", "v2");
        assertThat(second).extracting(this::valueOf).containsExactly("v3", "v4", "v5");
        assertThat(rest).extracting(this::valueOf).containsExactly("v6", "v7", "v8", "v9");
        List<OutboxRecord> all = new ArrayList<>(first);
        all.addAll(second);
        all.addAll(rest);
        assertAscendingIds(all);
        assertThat(all).allSatisfy(r -> assertThat(r.leaderId()).isEqualTo(leader));
        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).as("nothing left to mark").isTrue();
    }

    @Test
    void markOfAnEmptyOutboxReturnsNothing() {
        MarkResult result = Capabilities.marking(store).mark(UUID.randomUUID(), 100);

        assertThat(result.isEmpty()).isTrue();
        assertThat(result.records()).isEmpty();
        assertThat(result.rejected()).isEmpty();
    }

    @Test
    void markWithTheSameLeaderIdReturnsNothingNew() {
        commit(msg("a", "1"), msg("b", "2"));
        commit(msg("c", "3"));
        UUID leader = UUID.randomUUID();

        assertThat(Capabilities.marking(store).mark(leader, 10).records()).hasSize(3);
        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).as("second mark with the same leader id").isTrue();

        commit(msg("d", "4"));
        assertThat(Capabilities.marking(store).mark(leader, 10).records()).extracting(this::valueOf).containsExactly("4");
    }

    @Test
    void markWithAnotherLeaderIdStealsRowsInIdOrder() {
        for (int i = 0; i < 5; i++) {
            commit(msg("k" + i, "v" + i));
        }
        UUID oldLeader = UUID.randomUUID();
        UUID newLeader = UUID.randomUUID();
        List<OutboxRecord> byOld = Capabilities.marking(store).mark(oldLeader, 10).records();
        assertThat(byOld).hasSize(5);

        List<OutboxRecord> stolen = Capabilities.marking(store).mark(newLeader, 2).records();

        assertThat(stolen).extracting(OutboxRecord::id).containsExactly(byOld.get(0).id(), byOld.get(1).id());
        assertThat(stolen).allSatisfy(r -> assertThat(r.leaderId()).isEqualTo(newLeader));
        assertThat(stolen).extracting(OutboxRecord::message)
                .containsExactly(byOld.get(0).message(), byOld.get(1).message());
        // the old leader's id now differs on the stolen rows, so it would take them back
        assertThat(Capabilities.marking(store).mark(oldLeader, 10).records()).extracting(OutboxRecord::id)
                .containsExactly(byOld.get(0).id(), byOld.get(1).id());
        // the new leader goes on with the rest
        assertThat(Capabilities.marking(store).mark(newLeader, 10).records()).extracting(OutboxRecord::id)
                .containsExactly(byOld.get(0).id(), byOld.get(1).id(), byOld.get(2).id(), byOld.get(3).id(),
                        byOld.get(4).id());
    }

    @Test
    void markRejectsANullLeaderIdAndALimitBelowOne() {
        assertThatThrownBy(() -> Capabilities.marking(store).mark(null, 10))
                .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class);
        assertThatThrownBy(() -> Capabilities.marking(store).mark(UUID.randomUUID(), 0))
                .isInstanceOfAny(IllegalArgumentException.class)
                .hasMessageContaining("0");
    }

    // ---- transactions -------------------------------------------------------------------------------------

    @Test
    void uncommittedRowsAreNeverMarkedAndALateCommitIsMarkedOnTheNextPass() {
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> firstPass;
        try (TestTransaction early = begin(store)) {
            early.publish(msg("late", "taken first, committed last"));
            commit(msg("other", "committed first"));

            firstPass = Capabilities.marking(store).mark(leader, 10).records();
            assertThat(firstPass).extracting(this::valueOf).containsExactly("committed first");
            assertThat(Capabilities.gauges(store).backlog()).as("backlog before the late commit").isEqualTo(1);

            early.commit();
        }

        List<OutboxRecord> secondPass = Capabilities.marking(store).mark(leader, 10).records();
        assertThat(secondPass).extracting(this::valueOf).containsExactly("taken first, committed last");
        assertThat(secondPass.get(0).id()).as("the late row took its id before the other row was written")
                .isLessThan(firstPass.get(0).id());
        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).isTrue();
    }

    @Test
    void rolledBackRowsNeverAppear() {
        try (TestTransaction tx = begin(store)) {
            tx.publish(List.of(msg("k", "rolled back 1"), msg("k", "rolled back 2")));
            tx.rollback();
        }
        TestTransaction abandoned = begin(store);
        abandoned.publish(msg("k", "abandoned"));
        abandoned.close();
        commit(msg("k", "kept"));

        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("kept");
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(1);
    }

    // ---- read (cursor harvest) ------------------------------------------------------------------------------

    /** Reads rows above {@code after} with no recheck ranges; requires a store that supports read. */
    private ReadResult read(long after, int limit) {
        return Capabilities.reading(store).read(after, List.of(), limit);
    }

    @Test
    void readReturnsCommittedRowsAboveTheCursorInIdOrderUpToTheLimitAndChangesNothing() {
        assertThat(store.capability(dev.outbox.spi.CursorHarvest.class).isPresent()).as("supportsRead()").isTrue();
        for (int i = 0; i < 5; i++) {
            commit(msg("k" + (i % 2), "v" + i));
        }
        ReadResult first = read(0, 3);
        assertThat(first.rows().records()).extracting(this::valueOf).containsExactly("v0", "v1", "v2");
        assertThat(first.rows().rejected()).isEmpty();
        long cursor = first.maxId();
        assertThat(read(cursor, 10).rows().records()).extracting(this::valueOf).containsExactly("v3", "v4");
        assertThat(read(0, 10).rows().records()).as("a read marks nothing: the same rows again")
                .extracting(this::valueOf).containsExactly("v0", "v1", "v2", "v3", "v4");
        assertThat(Capabilities.reading(store).read(Long.MAX_VALUE - 1, List.of(), 10).rows().isEmpty()).isTrue();
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(5);
    }

    @Test
    void readAlsoReturnsCommittedRowsInTheRecheckRangesBelowTheCursorInOneIdOrder() {
        for (int i = 0; i < 8; i++) {
            commit(msg("k", "v" + i));
        }
        List<OutboxRecord> all = read(0, 100).rows().records();
        long[] ids = all.stream().mapToLong(OutboxRecord::id).toArray();
        ReadResult r = Capabilities.reading(store).read(ids[5], List.of(IdRange.of(ids[1]), new IdRange(ids[3], ids[4])), 100);
        assertThat(r.rows().records()).extracting(this::valueOf).containsExactly("v1", "v3", "v4", "v6", "v7");
        ReadResult limited = Capabilities.reading(store).read(ids[5], List.of(IdRange.of(ids[1]), new IdRange(ids[3], ids[4])), 2);
        assertThat(limited.rows().records()).as("the lowest ids first").extracting(this::valueOf)
                .containsExactly("v1", "v3");
    }

    @Test
    void readNeverReturnsAnUncommittedRowAndReturnsItsLateCommitWhenItsIdIsRechecked() {
        long lateId;
        long committedId;
        ReadResult passed;
        try (TestTransaction early = begin(store)) {
            early.publish(msg("late", "taken first, committed last"));
            commit(msg("other", "committed first"));

            passed = read(0, 10);
            assertThat(passed.rows().records()).extracting(this::valueOf).containsExactly("committed first");
            committedId = passed.maxId();
            ReadResult whileOpen = Capabilities.reading(store).read(committedId, List.of(new IdRange(1, committedId - 1)), 10);
            assertThat(whileOpen.rows().isEmpty()).as("the open writer's row").isTrue();
            assertThat(whileOpen.horizon()).as("a writer that took an id below the passed one is still open:"
                    + " the horizon must not reach the token of the read that passed it")
                    .isLessThan(passed.gapToken());
            early.commit();
        }
        ReadResult after = Capabilities.reading(store).read(committedId, List.of(new IdRange(1, committedId - 1)), 10);
        assertThat(after.rows().records()).extracting(this::valueOf).containsExactly("taken first, committed last");
        lateId = after.maxId();
        assertThat(lateId).isLessThan(committedId);
        assertThat(read(committedId, 10).rows().isEmpty()).as("nothing above the cursor").isTrue();
    }

    @Test
    void readNeverReturnsRolledBackOrParkedRowsAndReturnsUnreadableOnesAsRejected() {
        try (TestTransaction tx = begin(store)) {
            tx.publish(List.of(msg("k", "rolled back")));
            tx.rollback();
        }
        commit(msg("k", "parked"), msg("k", "kept"));
        insertMalformedRow(store, TOPIC, "bad");
        List<OutboxRecord> records = read(0, 10).rows().records();
        store.park(Map.of(records.get(0).id(), "parked by the test"));

        ReadResult r = read(0, 10);
        assertThat(r.rows().records()).extracting(this::valueOf).containsExactly("kept");
        assertThat(r.rows().rejected()).hasSize(1);
        assertThat(r.rows().rejected().get(0).key()).isEqualTo("bad");
        assertThat(r.maxId()).isEqualTo(r.rows().rejected().get(0).id());
    }

    @Test
    void readReturnsAFailedRowWithItsAttemptsAndNextAttemptTime() {
        commit(msg("k", "failed once"));
        OutboxRecord r = read(0, 10).rows().records().get(0);
        Instant next = Instant.now().plusSeconds(60).truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
        store.retryLater(Map.of(r.id(), next));

        OutboxRecord again = read(0, 10).rows().records().get(0);
        assertThat(again.attempts()).isEqualTo(1);
        assertThat(again.nextAttemptAt()).isEqualTo(next);
        assertThat(again.messageId()).isEqualTo(r.messageId());
    }

    @Test
    void readRejectsALimitBelowOneAndNullRanges() {
        assertReadRejectsBadArguments(store);
    }

    /** A read with a limit below one fails naming the limit; one with null recheck ranges fails (both contracts). */
    static void assertReadRejectsBadArguments(Store store) {
        assertThatThrownBy(() -> Capabilities.reading(store).read(0, List.of(), 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0");
        assertThatThrownBy(() -> Capabilities.reading(store).read(0, null, 1)).isInstanceOf(RuntimeException.class);
    }

    // ---- purge --------------------------------------------------------------------------------------------

    @Test
    void purgeDeletesTheGivenRowsWhoeverMarkedThemAndIgnoresUnknownIds() {
        for (int i = 0; i < 5; i++) {
            commit(msg("k" + i, "v" + i));
        }
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();

        store.purge(List.of(marked.get(0).id(), marked.get(2).id(), UNKNOWN_ID));

        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v1", "v3", "v4");
        // purging rows marked by another leader, or not marked at all, deletes them too
        commit(msg("k5", "v5"));
        List<Long> rest = ids(markAll(UUID.randomUUID()));
        store.purge(rest);
        assertThat(Capabilities.gauges(store).backlog()).isZero();
        assertThat(Capabilities.marking(store).mark(UUID.randomUUID(), 10).isEmpty()).isTrue();
    }

    @Test
    void purgeOfAnEmptyBatchOrOnlyUnknownIdsDoesNothing() {
        commit(msg("k", "v"));

        store.purge(List.of());
        store.purge(List.of(UNKNOWN_ID, UNKNOWN_ID + 1));

        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v");
    }

    // ---- reset --------------------------------------------------------------------------------------------

    @Test
    void resetCountsAnAttemptAndUnmarksTheRowsOfThatLeader() {
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();

        Capabilities.marking(store).reset(leader, List.of(marked.get(0).id(), marked.get(1).id(), UNKNOWN_ID));

        List<OutboxRecord> again = Capabilities.marking(store).mark(leader, 10).records();
        assertThat(again).extracting(OutboxRecord::id).containsExactly(marked.get(0).id(), marked.get(1).id());
        assertThat(again).extracting(OutboxRecord::attempts).containsExactly(1, 1);
        assertThat(again).extracting(OutboxRecord::message)
                .containsExactly(marked.get(0).message(), marked.get(1).message());

        Capabilities.marking(store).reset(leader, List.of(marked.get(0).id()));
        assertThat(Capabilities.marking(store).mark(leader, 10).records()).extracting(OutboxRecord::attempts).containsExactly(2);
        assertThat(markAll(UUID.randomUUID())).extracting(OutboxRecord::attempts).containsExactly(2, 1, 0);
    }

    @Test
    void resetKeepsTheMarkOfAnotherLeaderButCountsTheAttempt() {
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        UUID oldLeader = UUID.randomUUID();
        UUID newLeader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(oldLeader, 10).records();
        long stolenId = marked.get(0).id();
        assertThat(Capabilities.marking(store).mark(newLeader, 1).records()).extracting(OutboxRecord::id).containsExactly(stolenId);

        // the old leader learns that its sends of the first two rows failed
        Capabilities.marking(store).reset(oldLeader, List.of(stolenId, marked.get(1).id()));

        // the new leader's mark on the stolen row holds: it marks only the other two
        List<OutboxRecord> byNew = Capabilities.marking(store).mark(newLeader, 10).records();
        assertThat(byNew).extracting(OutboxRecord::id).containsExactly(marked.get(1).id(), marked.get(2).id());
        assertThat(byNew).extracting(OutboxRecord::attempts).containsExactly(1, 0);
        // the stolen row counted the attempt too
        OutboxRecord stolenRow = markAll(UUID.randomUUID()).get(0);
        assertThat(stolenRow.id()).isEqualTo(stolenId);
        assertThat(stolenRow.attempts()).isEqualTo(1);
    }

    @Test
    void resetOfAnUnmarkedRowCountsTheAttempt() {
        commit(msg("a", "1"));
        UUID leader = UUID.randomUUID();
        long id = Capabilities.marking(store).mark(leader, 10).records().get(0).id();
        Capabilities.marking(store).reset(leader, List.of(id));

        Capabilities.marking(store).reset(leader, List.of(id));

        assertThat(Capabilities.marking(store).mark(leader, 10).records()).extracting(OutboxRecord::attempts).containsExactly(2);
    }

    @Test
    void resetOfAnEmptyBatchDoesNothing() {
        commit(msg("a", "1"));
        UUID leader = UUID.randomUUID();
        assertThat(Capabilities.marking(store).mark(leader, 10).records()).hasSize(1);

        Capabilities.marking(store).reset(leader, List.of());

        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).as("the row is still marked").isTrue();
        assertThat(markAll(UUID.randomUUID())).extracting(OutboxRecord::attempts).containsExactly(0);
    }

    // ---- retryLater -----------------------------------------------------------------------------------------

    @Test
    void retryLaterCountsAnAttemptKeepsTheMarkAndRecordsTheNextAttemptTime() {
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();
        assertThat(marked).extracting(OutboxRecord::nextAttemptAt).containsOnlyNulls();
        Instant first = Instant.parse("2030-01-02T03:04:05.123456Z");
        Instant second = Instant.parse("2030-01-02T03:05:00.000001Z");
        Map<Long, Instant> failed = new HashMap<>();
        failed.put(marked.get(0).id(), first);
        failed.put(marked.get(2).id(), second);
        failed.put(UNKNOWN_ID, first);

        store.retryLater(failed);

        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).as("the rows keep their leader's mark").isTrue();
        List<OutboxRecord> byNewLeader = markAll(UUID.randomUUID());
        assertThat(byNewLeader).extracting(OutboxRecord::attempts).containsExactly(1, 0, 1);
        assertThat(byNewLeader).extracting(OutboxRecord::nextAttemptAt).containsExactly(first, null, second);
        assertThat(byNewLeader).extracting(OutboxRecord::message)
                .containsExactlyElementsOf(marked.stream().map(OutboxRecord::message).toList());

        store.retryLater(Map.of(marked.get(0).id(), second));
        OutboxRecord again = markAll(UUID.randomUUID()).get(0);
        assertThat(again.attempts()).isEqualTo(2);
        assertThat(again.nextAttemptAt()).isEqualTo(second);
    }

    @Test
    void retryLaterOfAnEmptyMapDoesNothingAndANullIdOrTimeIsRejected() {
        commit(msg("a", "1"));
        UUID leader = UUID.randomUUID();
        long id = Capabilities.marking(store).mark(leader, 10).records().get(0).id();

        store.retryLater(Map.of());
        Map<Long, Instant> nullTime = new HashMap<>();
        nullTime.put(id, null);
        assertThatThrownBy(() -> store.retryLater(nullTime)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(id));
        Map<Long, Instant> nullId = new HashMap<>();
        nullId.put(null, Instant.parse("2030-01-01T00:00:00Z"));
        assertThatThrownBy(() -> store.retryLater(nullId)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("null id");

        OutboxRecord row = markAll(UUID.randomUUID()).get(0);
        assertThat(row.attempts()).isZero();
        assertThat(row.nextAttemptAt()).isNull();
    }

    // ---- storage fencing ------------------------------------------------------------------------------------

    /**
     * A store that fences passes the fencing cases below; one that does not says so and refuses to take an epoch or
     * a fenced view, rather than pretending to fence.
     */
    @Test
    void aStoreThatDoesNotFenceRefusesToTakeAnEpoch() {
        if (store.capability(dev.outbox.spi.StorageFencing.class).isPresent()) {
            long first = Capabilities.fencing(store).acquireEpoch();
            assertThat(first).as("the first epoch").isPositive();
            assertThat(Capabilities.fencing(store).acquireEpoch()).as("each acquisition increments the epoch").isEqualTo(first + 1);
        } else {
            assertThatThrownBy(() -> Capabilities.fencing(store).acquireEpoch()).isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(() -> Capabilities.fencing(store).fencedBy(1)).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void writesFencedByTheCurrentEpochWorkAsUnfencedOnes() {
        if (!store.capability(dev.outbox.spi.StorageFencing.class).isPresent()) {
            return; // aStoreThatDoesNotFenceRefusesToTakeAnEpoch covers it
        }
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"), msg("d", "4"));
        Store leader = Capabilities.fencing(store).fencedBy(Capabilities.fencing(store).acquireEpoch());
        UUID id = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(leader).mark(id, 10).records();
        assertThat(marked).extracting(this::valueOf).containsExactly("1", "2", "3", "4");
        Instant later = Instant.parse("2030-01-02T03:04:05Z");

        leader.retryLater(Map.of(marked.get(1).id(), later, UNKNOWN_ID, later));
        Capabilities.marking(leader).reset(id, List.of(marked.get(2).id(), UNKNOWN_ID));
        leader.park(Map.of(marked.get(3).id(), "poison", UNKNOWN_ID, "unknown"));
        leader.purge(List.of(marked.get(0).id(), UNKNOWN_ID));
        leader.purge(List.of());

        assertThat(Capabilities.parkedRecords(store).parked(10)).extracting(ParkedRecord::id).containsExactly(marked.get(3).id());
        List<OutboxRecord> left = markAll(UUID.randomUUID());
        assertThat(left).extracting(this::valueOf).containsExactly("2", "3");
        assertThat(left).extracting(OutboxRecord::attempts).containsExactly(1, 1);
        assertThat(left.get(0).nextAttemptAt()).isEqualTo(later);
        assertThat(Capabilities.marking(leader).mark(UUID.randomUUID(), 10).records()).as("a fenced mark by the current epoch")
                .extracting(this::valueOf).containsExactly("2", "3");
    }

    @Test
    void writesFencedByAnEarlierEpochChangeNothingAndAreRefusedAsFenced() {
        if (!store.capability(dev.outbox.spi.StorageFencing.class).isPresent()) {
            return; // aStoreThatDoesNotFenceRefusesToTakeAnEpoch covers it
        }
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        long old = Capabilities.fencing(store).acquireEpoch();
        Store deposed = Capabilities.fencing(store).fencedBy(old);
        UUID oldId = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(deposed).mark(oldId, 10).records();
        assertThat(marked).hasSize(3);
        long current = Capabilities.fencing(store).acquireEpoch();
        assertThat(current).isGreaterThan(old);
        List<Long> ids = ids(marked);
        Instant later = Instant.parse("2030-01-02T03:04:05Z");

        assertFenced(() -> deposed.purge(ids), old, current);
        assertFenced(() -> deposed.purge(List.of(UNKNOWN_ID)), old, current);
        assertFenced(() -> deposed.retryLater(Map.of(ids.get(0), later)), old, current);
        assertFenced(() -> Capabilities.marking(deposed).reset(oldId, ids), old, current);
        assertFenced(() -> deposed.park(Map.of(ids.get(1), "poison")), old, current);
        commit(msg("e", "5"));
        assertFenced(() -> Capabilities.marking(deposed).mark(UUID.randomUUID(), 10), old, current);

        assertThat(Capabilities.parkedRecords(store).parked(10)).as("nothing parked").isEmpty();
        List<OutboxRecord> rows = Capabilities.marking(Capabilities.fencing(store).fencedBy(current)).mark(UUID.randomUUID(), 10).records();
        assertThat(rows).as("every row still there, as it was").extracting(this::valueOf)
                .containsExactly("1", "2", "3", "5");
        assertThat(rows).extracting(OutboxRecord::attempts).containsOnly(0);
        assertThat(rows).extracting(OutboxRecord::nextAttemptAt).containsOnlyNulls();
        assertThat(markAll(oldId)).as("the deposed leader's mark of row 5 did not happen either")
                .extracting(this::valueOf).containsExactly("1", "2", "3", "5");
    }

    private static void assertFenced(Runnable write, long epoch, long current) {
        assertThatThrownBy(write::run).isInstanceOfSatisfying(StoreFencedException.class, e -> {
            assertThat(e.epoch()).isEqualTo(epoch);
            assertThat(e.currentEpoch()).isEqualTo(current);
            assertThat(e.isRetriable()).isFalse();
        });
    }

    // ---- park and replay ------------------------------------------------------------------------------------

    @Test
    void parkedRowsAreNeverMarkedAndAreListedWithTheirReasonAndAttempts() {
        for (int i = 0; i < 4; i++) {
            commit(msg("k" + i, "v" + i));
        }
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();
        long parkedId = marked.get(1).id();
        Capabilities.marking(store).reset(leader, List.of(parkedId));
        Capabilities.marking(store).reset(leader, List.of(parkedId));
        Instant before = Instant.now();

        store.park(Map.of(parkedId, "too large: 2000000 bytes", UNKNOWN_ID, "unknown"));
        Instant after = Instant.now();

        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v0", "v2", "v3");
        assertThat(markAll(leader)).extracting(this::valueOf).as("not even for the leader that reset it")
                .containsExactly("v0", "v2", "v3");
        List<ParkedRecord> parked = Capabilities.parkedRecords(store).parked(10);
        assertThat(parked).hasSize(1);
        ParkedRecord p = parked.get(0);
        assertThat(p.id()).isEqualTo(parkedId);
        assertThat(p.topic()).isEqualTo(TOPIC);
        assertThat(p.key()).isEqualTo("k1");
        assertThat(p.attempts()).isEqualTo(2);
        assertThat(p.reason()).isEqualTo("too large: 2000000 bytes");
        if (p.parkedAt() != null) {
            assertThat(p.parkedAt()).isBetween(before.minus(CLOCK_SLACK), after.plus(CLOCK_SLACK));
        }
        // reset of a parked row does not bring it back
        Capabilities.marking(store).reset(leader, List.of(parkedId));
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v0", "v2", "v3");
    }

    @Test
    void parkOfAnEmptyBatchOrOnlyUnknownIdsDoesNothing() {
        commit(msg("k", "v"));

        store.park(Map.of());
        store.park(Map.of(UNKNOWN_ID, "unknown"));

        assertThat(Capabilities.parkedRecords(store).parked(10)).isEmpty();
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v");
    }

    @Test
    void parkedListsTheOldestParkedRowsUpToTheLimit() {
        for (int i = 0; i < 6; i++) {
            commit(msg("k" + i, "v" + i));
        }
        List<OutboxRecord> marked = markAll(UUID.randomUUID());
        Map<Long, String> reasons = new HashMap<>();
        for (int i = 0; i < 5; i++) {
            reasons.put(marked.get(i).id(), "reason " + i);
        }

        store.park(reasons);

        assertThat(Capabilities.parkedRecords(store).parked(3)).extracting(ParkedRecord::id)
                .containsExactly(marked.get(0).id(), marked.get(1).id(), marked.get(2).id());
        assertThat(Capabilities.parkedRecords(store).parked(3)).extracting(ParkedRecord::reason)
                .containsExactly("reason 0", "reason 1", "reason 2");
        assertThat(Capabilities.parkedRecords(store).parked(100)).hasSize(5);
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(1);
    }

    @Test
    void replayPutsParkedRowsBackAtTheTailWithAttemptsZero() {
        OutboxMessage first = OutboxMessage.builder(TOPIC, "k1").value("v1").header("h", "x").header("h", "y")
                .build();
        commit(first);
        commit(msg("k2", "v2"));
        commit(msg("k3", "v3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();
        Capabilities.marking(store).reset(leader, List.of(marked.get(0).id()));
        store.park(Map.of(marked.get(0).id(), "reason-1", marked.get(1).id(), "reason-2"));
        assertThat(Capabilities.parkedRecords(store).parked(10)).extracting(ParkedRecord::attempts).containsExactly(1, 0);

        int replayed = Capabilities.parkedRecords(store).replay(List.of(marked.get(0).id(), UNKNOWN_ID));

        assertThat(replayed).isEqualTo(1);
        assertThat(Capabilities.parkedRecords(store).parked(10)).extracting(ParkedRecord::id).containsExactly(marked.get(1).id());
        List<OutboxRecord> after = markAll(UUID.randomUUID());
        assertThat(after).hasSize(2);
        assertThat(after.get(0).id()).isEqualTo(marked.get(2).id());
        OutboxRecord back = after.get(1);
        assertThat(back.id()).as("a replayed row is a new row at the tail").isGreaterThan(marked.get(2).id());
        assertThat(back.message()).as("the parked message, marked as replayed with its parked id")
                .isEqualTo(first.withHeader(Header.of(KeySequence.REPLAYED, KeySequence.encode(marked.get(0).id()))));
        assertThat(back.attempts()).isZero();
        assertThat(Capabilities.parkedRecords(store).replay(List.of())).isZero();
        assertThat(Capabilities.parkedRecords(store).replay(List.of(marked.get(0).id()))).as("replaying twice").isZero();
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(2);
    }

    /**
     * Held keys ({@code DispatcherConfig.AfterPark.HOLD_KEY}): {@link dev.outbox.spi.ParkedKeys#parkedKeys} lists the parked rows' keys,
     * and a replay puts a key's replayed rows ahead of the key's rows that waited in the outbox (they move behind,
     * new ids, same order, same message ids); other keys' rows stay where they are. Only for a store with that
     * capability.
     */
    @Test
    void replayPutsAKeysReplayedRowsAheadOfItsWaitingRowsAndParkedKeysListsTheParkedKeys() {
        if (store.capability(dev.outbox.spi.ParkedKeys.class).isEmpty()) {
            return; // an optional capability: a store without it is not asked
        }
        assertThat(Capabilities.parkedKeys(store).parkedKeys()).isEmpty();
        commit(msg("a", "a0"));
        commit(msg("b", "b0"));
        List<OutboxRecord> heads = markAll(UUID.randomUUID());
        store.park(Map.of(heads.get(0).id(), "poison", heads.get(1).id(), "poison"));
        commit(msg("a", "a1"), msg("c", "c1"));
        commit(msg("a", "a2"));
        assertThat(Capabilities.parkedKeys(store).parkedKeys()).containsExactlyInAnyOrder("a", "b");
        List<OutboxRecord> waiting = markAll(UUID.randomUUID());

        assertThat(Capabilities.parkedRecords(store).replay(List.of(heads.get(0).id()))).isEqualTo(1);

        assertThat(Capabilities.parkedKeys(store).parkedKeys()).containsExactly("b");
        List<OutboxRecord> after = markAll(UUID.randomUUID());
        assertThat(after).extracting(this::valueOf).as("c1 stays; a's replayed row, then its waiting rows")
                .containsExactly("c1", "a0", "a1", "a2");
        assertThat(after.get(0).id()).isEqualTo(waiting.get(1).id());
        assertThat(after.get(1).id()).isGreaterThan(waiting.get(2).id());
        assertThat(after.get(1).messageId()).isEqualTo(heads.get(0).messageId());
        assertThat(after.get(2).messageId()).as("a moved row keeps its message id").isEqualTo(waiting.get(0).messageId());
        assertThat(after.get(3).messageId()).isEqualTo(waiting.get(2).messageId());
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(4);
        Capabilities.parkedRecords(store).replay(List.of(heads.get(1).id()));
        assertThat(Capabilities.parkedKeys(store).parkedKeys()).isEmpty();
    }

    // ---- message ids ----------------------------------------------------------------------------------------

    @Test
    void everyRowHasAVersion7MessageIdThatSurvivesResetParkAndReplay() {
        commit(msg("k1", "v1"), msg("k2", "v2"), msg("k3", "v3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();
        assertThat(marked).hasSize(3);
        for (OutboxRecord r : marked) {
            assertThat(r.messageId()).as("message id of %s", r).isNotNull();
            assertThat(r.messageId().version()).as("version of %s", r.messageId()).isEqualTo(7);
        }
        assertThat(marked).extracting(OutboxRecord::messageId).doesNotHaveDuplicates();
        assertThat(dev.outbox.MessageIds.unixMillis(marked.get(0).messageId()))
                .as("the id's time is the write time").isCloseTo(System.currentTimeMillis(),
                        org.assertj.core.data.Offset.offset(CLOCK_SLACK.toMillis()));
        assertThat(marked.get(0).messageId()).as("ids of one batch follow the list")
                .isLessThan(marked.get(1).messageId());

        Capabilities.marking(store).reset(leader, List.of(marked.get(0).id()));
        OutboxRecord again = Capabilities.marking(store).mark(UUID.randomUUID(), 1).records().get(0);
        assertThat(again.messageId()).as("after reset and a new mark").isEqualTo(marked.get(0).messageId());

        store.park(Map.of(marked.get(1).id(), "parked for the test"));
        Capabilities.parkedRecords(store).replay(List.of(marked.get(1).id()));
        OutboxRecord replayed = markAll(UUID.randomUUID()).stream()
                .filter(r -> r.key().equals("k2")).findFirst().orElseThrow();
        assertThat(replayed.id()).as("a replayed row has a new id").isNotEqualTo(marked.get(1).id());
        assertThat(replayed.messageId()).as("but the same message id").isEqualTo(marked.get(1).messageId());
    }

    // ---- unreadable rows ------------------------------------------------------------------------------------

    @Test
    void aRowThatCannotBeReadIsMarkedAndRejectedWithoutStoppingTheOthers() {
        commit(msg("good-1", "v1"));
        insertMalformedRow(store, TOPIC, "bad-key");
        commit(msg("good-2", "v2"));
        UUID leader = UUID.randomUUID();

        MarkResult first = Capabilities.marking(store).mark(leader, 2);
        MarkResult second = Capabilities.marking(store).mark(leader, 2);

        assertThat(first.size()).as("an unreadable row counts against the limit").isEqualTo(2);
        assertThat(first.records()).extracting(this::valueOf).containsExactly("v1");
        assertThat(first.rejected()).hasSize(1);
        MarkResult.Rejected bad = first.rejected().get(0);
        assertThat(bad.id()).isGreaterThan(first.records().get(0).id());
        assertThat(bad.topic()).isEqualTo(TOPIC);
        assertThat(bad.key()).isEqualTo("bad-key");
        assertThat(bad.attempts()).isZero();
        assertThat(bad.reason()).isNotBlank();
        assertThat(second.rejected()).isEmpty();
        assertThat(second.records()).extracting(this::valueOf).containsExactly("v2");
        assertThat(second.records().get(0).id()).isGreaterThan(bad.id());
        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).as("the unreadable row is marked like any other").isTrue();
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);

        store.park(Map.of(bad.id(), "unreadable: " + bad.reason()));
        assertThat(Capabilities.parkedRecords(store).parked(10)).singleElement().satisfies(p -> {
            assertThat(p.id()).isEqualTo(bad.id());
            assertThat(p.topic()).isEqualTo(TOPIC);
            assertThat(p.key()).isEqualTo("bad-key");
            assertThat(p.reason()).isEqualTo("unreadable: " + bad.reason());
        });
        assertThat(Capabilities.parkedRecords(store).replay(List.of(bad.id()))).isEqualTo(1);
        MarkResult replayed = Capabilities.marking(store).mark(UUID.randomUUID(), 10);
        assertThat(replayed.records()).hasSize(2);
        assertThat(replayed.rejected()).singleElement().satisfies(r -> {
            assertThat(r.id()).isGreaterThan(second.records().get(0).id());
            assertThat(r.key()).isEqualTo("bad-key");
        });
    }

    // ---- backlog ------------------------------------------------------------------------------------------

    @Test
    void backlogCountsCommittedUnparkedRowsMarkedOrNot() {
        assertThat(Capabilities.gauges(store).backlog()).isZero();
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"), msg("d", "4"));
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(4);
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 2).records();
        assertThat(Capabilities.gauges(store).backlog()).as("marked rows still count").isEqualTo(4);

        store.purge(List.of(marked.get(0).id()));
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);
        store.park(Map.of(marked.get(1).id(), "parked"));
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(2);
        try (TestTransaction open = begin(store)) {
            open.publish(msg("e", "5"));
            assertThat(Capabilities.gauges(store).backlog()).as("uncommitted rows do not count").isEqualTo(2);
        }
        Capabilities.parkedRecords(store).replay(List.of(marked.get(1).id()));
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);
    }

    @Test
    void parkedCountCountsParkedRowsUntilTheyAreReplayed() {
        assertThat(Capabilities.gauges(store).parkedCount()).isZero();
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        List<OutboxRecord> marked = Capabilities.marking(store).mark(UUID.randomUUID(), 3).records();
        assertThat(Capabilities.gauges(store).parkedCount()).as("marked rows are not parked").isZero();

        store.park(Map.of(marked.get(0).id(), "first", marked.get(2).id(), "third"));
        assertThat(Capabilities.gauges(store).parkedCount()).isEqualTo(2);
        Capabilities.parkedRecords(store).replay(List.of(marked.get(0).id()));
        assertThat(Capabilities.gauges(store).parkedCount()).isEqualTo(1);
    }

    @Test
    void oldestCreateTimeIsTheCreationTimeOfTheHeadOfTheOutbox() {
        assertThat(Capabilities.gauges(store).oldestCreateTime()).as("empty outbox").isEmpty();
        commit(msg("a", "1"));
        commit(msg("b", "2"));
        commit(msg("c", "3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 2).records();
        assertThat(Capabilities.gauges(store).oldestCreateTime()).as("marked rows still count").contains(marked.get(0).createdAt());

        store.purge(List.of(marked.get(0).id()));
        assertThat(Capabilities.gauges(store).oldestCreateTime()).contains(marked.get(1).createdAt());
        store.park(Map.of(marked.get(1).id(), "parked"));
        List<OutboxRecord> rest = Capabilities.marking(store).mark(leader, 10).records();
        assertThat(rest).hasSize(1);
        assertThat(Capabilities.gauges(store).oldestCreateTime()).as("parked rows do not count").contains(rest.get(0).createdAt());
        try (TestTransaction open = begin(store)) {
            open.publish(msg("d", "4"));
            store.purge(List.of(rest.get(0).id()));
            assertThat(Capabilities.gauges(store).oldestCreateTime()).as("uncommitted rows do not count").isEmpty();
        }
    }

    // ---- volume and concurrency -------------------------------------------------------------------------------

    @Test
    void largeBatchesAreMarkedAndPurgedInFullInIdOrder() {
        int total = 5_000;
        for (int tx = 0; tx < 5; tx++) {
            List<OutboxMessage> batch = new ArrayList<>();
            for (int i = 0; i < 1_000; i++) {
                int n = tx * 1_000 + i;
                batch.add(OutboxMessage.of(TOPIC, "key-" + (n % 97), "v" + n));
            }
            try (TestTransaction t = begin(store)) {
                t.publish(batch);
                t.commit();
            }
        }
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(total);
        UUID leader = UUID.randomUUID();

        List<OutboxRecord> all = new ArrayList<>();
        for (int pass = 0; pass < 5; pass++) {
            List<OutboxRecord> batch = Capabilities.marking(store).mark(leader, 1_000).records();
            assertThat(batch).as("pass %d", pass).hasSize(1_000);
            all.addAll(batch);
        }
        assertThat(Capabilities.marking(store).mark(leader, 1_000).isEmpty()).isTrue();

        assertAscendingIds(all);
        for (int n = 0; n < total; n++) {
            if (!valueOf(all.get(n)).equals("v" + n)) {
                throw new AssertionError("record " + n + " of the marked batches is " + all.get(n) + " with value "
                        + valueOf(all.get(n)) + ", expected v" + n);
            }
        }
        store.purge(ids(all));
        assertThat(Capabilities.gauges(store).backlog()).isZero();
        assertThat(Capabilities.marking(store).mark(UUID.randomUUID(), 1_000).isEmpty()).isTrue();
    }

    @Test
    void concurrentWritersAndMarksMarkEveryCommittedRowOncePerLeaderAndEachKeyInWriteOrder() throws Exception {
        long seed = System.nanoTime();
        int writers = 4;
        int keysPerWriter = 10;
        int transactionsPerWriter = 50;
        Map<String, List<String>> committedByKey = new ConcurrentHashMap<>();
        Set<String> rolledBack = ConcurrentHashMap.newKeySet();
        AtomicBoolean writing = new AtomicBoolean(true);
        List<OutboxRecord> markedByFirst = new CopyOnWriteArrayList<>();
        UUID first = UUID.randomUUID();
        ExecutorService pool = Executors.newFixedThreadPool(writers + 1);
        try {
            List<Future<?>> writerFutures = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                int writer = w;
                Random random = new Random(seed + w);
                writerFutures.add(pool.submit(() -> {
                    for (int t = 0; t < transactionsPerWriter; t++) {
                        List<OutboxMessage> batch = new ArrayList<>();
                        int size = 1 + random.nextInt(4);
                        for (int m = 0; m < size; m++) {
                            String key = "w" + writer + "-k" + random.nextInt(keysPerWriter);
                            batch.add(OutboxMessage.of(TOPIC, key, "w" + writer + "-t" + t + "-m" + m));
                        }
                        boolean commit = random.nextInt(10) != 0;
                        try (TestTransaction tx = begin(store)) {
                            tx.publish(batch);
                            if (commit) {
                                tx.commit();
                            } else {
                                tx.rollback();
                            }
                        }
                        for (OutboxMessage m : batch) {
                            String value = new String(m.value(), StandardCharsets.UTF_8);
                            if (commit) {
                                committedByKey.computeIfAbsent(m.key(), k -> new CopyOnWriteArrayList<>()).add(value);
                            } else {
                                rolledBack.add(value);
                            }
                        }
                    }
                    return null;
                }));
            }
            Random markerRandom = new Random(seed - 1);
            Future<?> marker = pool.submit(() -> {
                while (writing.get()) {
                    markedByFirst.addAll(Capabilities.marking(store).mark(first, 1 + markerRandom.nextInt(50)).records());
                }
                return null;
            });
            try {
                for (Future<?> f : writerFutures) {
                    f.get(50, TimeUnit.SECONDS);
                }
            } finally {
                writing.set(false);
            }
            marker.get(50, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError("seed " + seed + ": a writer or the marker failed: " + e.getCause(), e.getCause());
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(10, TimeUnit.SECONDS);
        }
        markedByFirst.addAll(markAll(first));
        List<OutboxRecord> markedBySecond = markAll(UUID.randomUUID());

        try {
            int committed = committedByKey.values().stream().mapToInt(List::size).sum();
            assertThat(committed).isPositive();
            for (List<OutboxRecord> marked : List.of(markedByFirst, markedBySecond)) {
                assertThat(ids(marked)).as("every row marked once").doesNotHaveDuplicates().hasSize(committed);
                Map<String, List<String>> markedByKey = new LinkedHashMap<>();
                Map<String, Long> lastIdOfKey = new HashMap<>();
                for (OutboxRecord r : marked) {
                    markedByKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(valueOf(r));
                    Long last = lastIdOfKey.put(r.key(), r.id());
                    if (last != null && last >= r.id()) {
                        throw new AssertionError("key " + r.key() + ": id " + r.id() + " marked after id " + last);
                    }
                    assertThat(rolledBack).as("rolled back").doesNotContain(valueOf(r));
                }
                assertThat(markedByKey).as("per key, marked in the order written")
                        .containsExactlyInAnyOrderEntriesOf(committedByKey);
            }
            assertAscendingIds(markedBySecond);
        } catch (AssertionError e) {
            throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
        }
    }

    // ---- bad input ----------------------------------------------------------------------------------------

    @Test
    void publisherRejectsANullMessageNamingItsIndex() {
        try (TestTransaction tx = begin(store)) {
            assertThatThrownBy(() -> tx.publish(Arrays.asList(msg("k", "0"), msg("k", "1"), null, msg("k", "3"))))
                    .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class)
                    .hasMessageContaining("2");
            tx.rollback();
        }
        try (TestTransaction tx = begin(store)) {
            assertThatThrownBy(() -> tx.publish((List<OutboxMessage>) null))
                    .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class);
            tx.rollback();
        }
        commit(msg("k", "after"));

        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("after");
    }

    @Test
    void publishingAnEmptyListWritesNothing() {
        try (TestTransaction tx = begin(store)) {
            tx.publish(Collections.emptyList());
            tx.commit();
        }

        assertThat(Capabilities.marking(store).mark(UUID.randomUUID(), 10).isEmpty()).isTrue();
        assertThat(Capabilities.gauges(store).backlog()).isZero();
    }

    // ---- helpers ------------------------------------------------------------------------------------------

    /**
     * A message to {@link #TOPIC} with {@code value} in UTF-8.
     *
     * @param key   its key, {@code null} for none
     * @param value its value, encoded as UTF-8
     * @return a message without headers
     */
    protected static OutboxMessage msg(String key, String value) {
        return OutboxMessage.of(TOPIC, key, value);
    }

    /**
     * Writes {@code messages} in one transaction and commits it.
     *
     * @param messages the messages, in the order written; none {@code null}
     */
    protected final void commit(OutboxMessage... messages) {
        try (TestTransaction tx = begin(store)) {
            tx.publish(List.of(messages));
            tx.commit();
        }
    }

    /**
     * Marks for {@code leader} until nothing is left; returns everything marked, in order.
     *
     * @param leader the leader id to mark with
     * @return the records of every mark, in the order returned (rejected rows left out)
     * @throws AssertionError if a mark returns a row the same leader had marked already
     */
    protected final List<OutboxRecord> markAll(UUID leader) {
        List<OutboxRecord> all = new ArrayList<>();
        Set<Long> seen = new HashSet<>();
        while (true) {
            MarkResult result = Capabilities.marking(store).mark(leader, 500);
            if (result.isEmpty()) {
                return all;
            }
            for (OutboxRecord r : result.records()) {
                if (!seen.add(r.id())) {
                    throw new AssertionError("mark(" + leader + ") returned row " + r.id()
                            + " again although that leader had marked it already: " + r);
                }
            }
            for (MarkResult.Rejected r : result.rejected()) {
                if (!seen.add(r.id())) {
                    throw new AssertionError("mark(" + leader + ") returned rejected row " + r.id() + " again");
                }
            }
            all.addAll(result.records());
        }
    }

    /**
     * The value of {@code record} decoded as UTF-8, or null for a tombstone.
     *
     * @param record a record read from the store
     * @return its value as text, or {@code null} for a tombstone
     */
    protected final String valueOf(OutboxRecord record) {
        byte[] value = record.message().value();
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    private static List<Long> ids(List<OutboxRecord> records) {
        List<Long> ids = new ArrayList<>(records.size());
        for (OutboxRecord r : records) {
            ids.add(r.id());
        }
        return ids;
    }

    private static void assertAscendingIds(List<OutboxRecord> records) {
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < records.size(); i++) {
            assertThat(seen.add(records.get(i).id())).as("id %d appears twice", records.get(i).id()).isTrue();
            if (i > 0 && records.get(i - 1).id() >= records.get(i).id()) {
                throw new AssertionError("ids not ascending: " + records.get(i - 1) + " before " + records.get(i));
            }
        }
    }
}
