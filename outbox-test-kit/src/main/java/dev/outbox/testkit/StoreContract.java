package dev.outbox.testkit;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
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
 *
 * <h2>The suite is a chain of contracts, one concern each</h2>
 * This class holds the write, mark and read tests, the gauges, volume and concurrency; it extends
 * {@link ParkedRecordsContract} (park, the parked list and count, replay, parked keys), which extends
 * {@link StoreWritesContract} (purge, reset, retryLater, storage fencing), which extends
 * {@link StoreContractSupport} (the hooks above, a fresh store per test, the helpers). JUnit 5 runs a test class's
 * inherited tests, so a store's test extends this one class, implements the hooks once and runs every link: its file
 * stays the five hooks above, and a new link (a concern the port grows) reaches every store without a change to its
 * test. The other shapes JUnit 5 offers were weighed: an {@code @Nested} class per concern in each store's test would
 * repeat the hooks in every store file (and a store could leave one out), and an interface with default test
 * methods would make the hooks and helpers public, which the stores' {@code protected} overrides could not keep.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class StoreContract extends ParkedRecordsContract {
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
}
