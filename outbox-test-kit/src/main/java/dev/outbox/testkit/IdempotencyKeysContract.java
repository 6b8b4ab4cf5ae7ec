package dev.outbox.testkit;

import dev.outbox.DuplicateMessageException;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.IdempotencyKeys;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The contract of a store that keeps idempotency keys ({@link OutboxMessage#idempotencyKey()},
 * {@link IdempotencyKeys}), against a real database: a key written again within the retention writes nothing (or
 * fails with {@link DuplicateMessageException}, as configured), the first message's row being the only one; a
 * rolled-back write does not hold the key; after the retention (on the database's clock) the key can be written
 * again; concurrent writers of one key, each in its own transaction, write exactly one row per key under the
 * database's default isolation; {@link IdempotencyKeys#deleteExpired} deletes only expired entries; with the option
 * off, a message with a key is refused, naming it, and no table is needed.
 *
 * <p>A subclass opens an outbox of its own for each call of {@link #outbox} and drops it after each test.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class IdempotencyKeysContract {
    private static final String TOPIC = "orders";
    private static final Duration LONG = Duration.ofHours(1);

    /** An outbox under test, with its own tables. */
    public interface Outbox {
        /**
         * The store.
         *
         * @return the store
         */
        Store store();

        /**
         * The store's publisher.
         *
         * @return the publisher
         */
        Publisher publisher();

        /**
         * The values of the outbox's rows, as UTF-8 text, in id order.
         *
         * @return the values
         */
        List<String> values();

        /**
         * How many idempotency entries the store keeps now, expired or not.
         *
         * @return the count
         */
        long entries();

        /**
         * The age of a key's entry on the database's clock: the database's current time minus the entry's time.
         *
         * @param idempotencyKey the key
         * @return the age, or null if there is no entry
         */
        Duration age(String idempotencyKey);

        /**
         * Whether the store's idempotency table exists.
         *
         * @return true if it exists
         */
        boolean entriesTableExists();
    }

    /** A contract run; the subclass sets up its database. */
    protected IdempotencyKeysContract() {
    }

    /**
     * A new outbox, its schema created.
     *
     * @param retention       the idempotency keys' retention, or null for the option off
     * @param failOnDuplicate true to fail on a duplicate, false to skip it
     * @return the outbox
     */
    protected abstract Outbox outbox(Duration retention, boolean failOnDuplicate);

    /**
     * The connections the application's transactions run on: at least 5.
     *
     * @return the data source
     */
    protected abstract DataSource writers();

    // ---- one writer ---------------------------------------------------------------------------------------------

    @Test
    void aKeyWrittenAgainWithinTheRetentionWritesNothingWhenSkipping() {
        Outbox outbox = outbox(LONG, false);
        commit(outbox, msg("k1", "first"));
        commit(outbox, msg("k1", "second"), msg(null, "plain"), msg("k2", "other"));

        assertThat(outbox.values()).containsExactly("first", "plain", "other");
        assertThat(outbox.entries()).isEqualTo(2);
    }

    @Test
    void twoMessagesOfOneCallWithOneKeyTheFirstWinsWhenSkipping() {
        Outbox outbox = outbox(LONG, false);
        commit(outbox, msg("k1", "a"), msg("k1", "b"), msg(null, "c"), msg("k2", "d"), msg("k2", "e"));
        commit(outbox, msg("k2", "f"));

        assertThat(outbox.values()).containsExactly("a", "c", "d");
    }

    @Test
    void aKeyWrittenAgainWithinTheRetentionFailsNamingItWhenFailing() {
        Outbox outbox = outbox(LONG, true);
        commit(outbox, msg("k1", "first"));

        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(writers(), outbox.publisher())) {
            assertThatThrownBy(() -> tx.publish(List.of(msg(null, "plain"), msg("k1", "second"))))
                    .isInstanceOf(DuplicateMessageException.class)
                    .hasMessageContaining("message 1").hasMessageContaining("'" + TOPIC + "'")
                    .hasMessageContaining("'key-k1'").hasMessageContaining("'k1'")
                    .satisfies(e -> assertThat(((DuplicateMessageException) e).idempotencyKey()).isEqualTo("k1"));
            tx.rollback();
        }
        assertThat(outbox.values()).containsExactly("first");
    }

    /**
     * FAIL writes nothing of the call even if the caller commits what the call left: the key claimed before the
     * duplicate was found is not kept (it can be written later).
     */
    @Test
    void aFailedCallLeavesNoClaimBehindEvenIfTheTransactionCommits() {
        Outbox outbox = outbox(LONG, true);
        commit(outbox, msg("k2", "first"));

        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(writers(), outbox.publisher())) {
            assertThatThrownBy(() -> tx.publish(List.of(msg("k1", "new"), msg("k2", "again"))))
                    .isInstanceOf(DuplicateMessageException.class).hasMessageContaining("'k2'");
            tx.commit();
        }
        assertThat(outbox.values()).containsExactly("first");
        assertThat(outbox.entries()).isEqualTo(1);
        assertThat(outbox.age("k1")).isNull();

        assertThatThrownBy(() -> commit(outbox, msg("k3", "a"), msg("k3", "b")))
                .isInstanceOf(DuplicateMessageException.class).hasMessageContaining("message 1")
                .hasMessageContaining("message 0 of the same call");
        commit(outbox, msg("k1", "later"));
        assertThat(outbox.values()).containsExactly("first", "later");
    }

    @Test
    void aRolledBackWriteDoesNotHoldTheKey() {
        Outbox outbox = outbox(LONG, true);
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(writers(), outbox.publisher())) {
            tx.publish(List.of(msg("k1", "rolled back")));
            tx.rollback();
        }
        commit(outbox, msg("k1", "second"));

        assertThat(outbox.values()).containsExactly("second");
    }

    @Test
    void afterTheRetentionAKeyCanBeWrittenAgain() {
        Duration retention = Duration.ofMillis(1500);
        Outbox outbox = outbox(retention, true);
        commit(outbox, msg("k1", "first"));
        Duration firstAge = outbox.age("k1");
        assertThat(firstAge).isNotNull();
        assertThatThrownBy(() -> commit(outbox, msg("k1", "too early")))
                .isInstanceOf(DuplicateMessageException.class);

        awaitExpired(outbox, "k1", retention);
        commit(outbox, msg("k1", "again"));

        assertThat(outbox.values()).containsExactly("first", "again");
        assertThat(outbox.entries()).isEqualTo(1);
        assertThat(outbox.age("k1")).as("renewed by the second write").isLessThan(retention);
    }

    @Test
    void deleteExpiredDeletesOnlyExpiredEntries() {
        Duration retention = Duration.ofMillis(1500);
        Outbox outbox = outbox(retention, false);
        IdempotencyKeys keys = outbox.store().capability(IdempotencyKeys.class).orElseThrow();
        commit(outbox, msg("old1", "a"), msg("old2", "b"));
        awaitExpired(outbox, "old2", retention);
        awaitExpired(outbox, "old1", retention);
        commit(outbox, msg("new", "c"));

        assertThat(keys.deleteExpired(1)).isEqualTo(1);
        assertThat(keys.deleteExpired(10)).isEqualTo(1);
        assertThat(keys.deleteExpired(10)).isZero();
        assertThat(outbox.entries()).isEqualTo(1);
        assertThat(outbox.age("new")).isNotNull();
        assertThat(outbox.values()).as("the rows are not touched").containsExactly("a", "b", "c");
        assertThatThrownBy(() -> keys.deleteExpired(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0");
    }

    @Test
    void withTheOptionOffAMessageWithAKeyIsRefusedNamingIt() {
        Outbox outbox = outbox(null, false);
        assertThat(outbox.store().capability(IdempotencyKeys.class)).isEmpty();
        assertThat(outbox.entriesTableExists()).isFalse();

        assertThatThrownBy(() -> commit(outbox, msg(null, "plain"), msg("k1", "keyed")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("message 1")
                .hasMessageContaining("'k1'").hasMessageContaining("idempotency");
        commit(outbox, msg(null, "plain"));
        assertThat(outbox.values()).containsExactly("plain");
    }

    // ---- racing writers -----------------------------------------------------------------------------------------

    /** Four writers, each in its own transaction, write the same new key at once, 40 rounds: one row per key. */
    @Test
    void concurrentWritersOfOneKeyWriteExactlyOneRowWhenSkipping() throws Exception {
        race(outbox(LONG, false));
    }

    /** As {@link #concurrentWritersOfOneKeyWriteExactlyOneRowWhenSkipping}, the losers failing and rolling back. */
    @Test
    void concurrentWritersOfOneKeyWriteExactlyOneRowWhenFailing() throws Exception {
        race(outbox(LONG, true));
    }

    private void race(Outbox outbox) throws Exception {
        int threads = 4;
        int rounds = 40;
        long seed = System.nanoTime();
        CyclicBarrier barrier = new CyclicBarrier(threads);
        AtomicInteger duplicates = new AtomicInteger();
        AtomicInteger retries = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> writers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int writer = t;
                writers.add(pool.submit(() -> {
                    java.util.Random random = new java.util.Random(seed + writer);
                    for (int round = 0; round < rounds; round++) {
                        barrier.await(60, TimeUnit.SECONDS);
                        // a second key, in random order, so that writers also hold keys in common
                        List<OutboxMessage> batch = new ArrayList<>(List.of(msg("race-" + round, writer + "/" + round)));
                        if (random.nextBoolean()) {
                            batch.add(random.nextBoolean() ? 0 : 1, msg("side-" + round, "side-" + round));
                        }
                        writeRetrying(outbox, batch, duplicates, retries);
                    }
                    return null;
                }));
            }
            for (Future<?> w : writers) {
                w.get(180, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }
        List<String> values = outbox.values();
        for (int round = 0; round < rounds; round++) {
            String prefix = "/" + round;
            assertThat(values.stream().filter(v -> v.endsWith(prefix)).count())
                    .as("rows of key race-%d, seed %d (%d duplicates refused, %d retried): %s", round, seed,
                            duplicates.get(), retries.get(), values)
                    .isEqualTo(1);
        }
        long sides = 0;
        for (int round = 0; round < rounds; round++) {
            String side = "side-" + round;
            long rows = values.stream().filter(side::equals).count();
            assertThat(rows).as("rows of key %s, seed %d", side, seed).isLessThanOrEqualTo(1);
            sides += rows;
        }
        assertThat(values).as("seed %d", seed).hasSize(rounds + (int) sides);
        assertThat(outbox.entries()).as("one entry per row, seed %d", seed).isEqualTo(rounds + sides);
    }

    /** Writes in a transaction of its own; a duplicate (FAIL) is rolled back, a retriable failure is retried. */
    private void writeRetrying(Outbox outbox, List<OutboxMessage> batch, AtomicInteger duplicates,
                               AtomicInteger retries) {
        for (int attempt = 1; ; attempt++) {
            try (JdbcTestTransaction tx = JdbcTestTransaction.begin(writers(), outbox.publisher())) {
                try {
                    tx.publish(batch);
                } catch (DuplicateMessageException e) {
                    duplicates.incrementAndGet();
                    tx.rollback();
                    return;
                }
                tx.commit();
                return;
            } catch (StoreException e) {
                if (!e.isRetriable() || attempt == 5) {
                    throw e;
                }
                retries.incrementAndGet(); // a deadlock the database broke: the transaction is to be retried
            } catch (IllegalStateException e) {
                if (attempt == 5) {
                    throw e;
                }
                retries.incrementAndGet(); // the commit failed (a serialization failure found at commit)
            }
        }
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    private static void awaitExpired(Outbox outbox, String key, Duration retention) {
        Await.untilOrFail(() -> outbox.age(key).compareTo(retention.plusMillis(50)) > 0, Duration.ofSeconds(30),
                () -> "the entry of " + key + " older than " + retention + " on the database's clock");
    }

    private void commit(Outbox outbox, OutboxMessage... messages) {
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(writers(), outbox.publisher())) {
            tx.publish(List.of(messages));
            tx.commit();
        }
    }

    private static OutboxMessage msg(String idempotencyKey, String value) {
        return OutboxMessage.builder(TOPIC, "key-" + (idempotencyKey == null ? "none" : idempotencyKey))
                .value(value).idempotencyKey(idempotencyKey).build();
    }
}
