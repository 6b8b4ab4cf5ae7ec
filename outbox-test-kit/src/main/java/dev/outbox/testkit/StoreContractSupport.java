package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.Store;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the store contracts share: the hooks a store's test implements ({@link #createStore()}, {@link #begin},
 * {@link #insertRow}, ...), a fresh store for each test, and the helpers the tests write and mark with. The first link
 * of the chain {@link StoreContractSupport} &larr; {@link StoreWritesContract} &larr; {@link ParkedRecordsContract}
 * &larr; {@link StoreContract}, each link the tests of one concern of the {@link Store} port; a store's test extends
 * {@link StoreContract} and so runs them all (its Javadoc says why a chain).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class StoreContractSupport {
    /** The topic most contract messages go to. */
    protected static final String TOPIC = "outbox-contract";
    /** How far a store's timestamps may be from this JVM's clock (the database may run elsewhere). */
    protected static final Duration CLOCK_SLACK = Duration.ofMinutes(2);
    static final long UNKNOWN_ID = 999_999_999L;

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

    static List<Long> ids(List<OutboxRecord> records) {
        List<Long> ids = new ArrayList<>(records.size());
        for (OutboxRecord r : records) {
            ids.add(r.id());
        }
        return ids;
    }

    static void assertAscendingIds(List<OutboxRecord> records) {
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < records.size(); i++) {
            assertThat(seen.add(records.get(i).id())).as("id %d appears twice", records.get(i).id()).isTrue();
            if (i > 0 && records.get(i - 1).id() >= records.get(i).id()) {
                throw new AssertionError("ids not ascending: " + records.get(i - 1) + " before " + records.get(i));
            }
        }
    }
}
