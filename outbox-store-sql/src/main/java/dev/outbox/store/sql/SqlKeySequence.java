package dev.outbox.store.sql;

import dev.outbox.Header;
import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.SqlTableNames;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The writer's side of the per-key sequence ({@link KeySequence#SEQUENCE}), for a SQL store whose key sequence is
 * on ({@link SqlStoreBuilder#keySequence}): numbers each message 1, 2, 3, … among the messages of its topic and key,
 * from a counter row per (topic, key) in the table {@code <outbox table>_key_seq}.
 *
 * <h2>Why the numbers follow the delivery order</h2>
 * A publish call first groups its messages by (topic, key) and, for the groups in ascending order of topic, then key
 * ({@link String#compareTo}), adds each group's size n to its counter row and reads the new value {@code last} (one
 * upsert per group, or one statement for all of them where the database can: the {@link Counter} takes the rows'
 * locks in that order); the group's messages get {@code last - n + 1} … {@code last} in list order. Only then does it
 * insert the rows (or, in Postgres' WAL mode, emit the messages). The upsert locks the counter row until the writer's
 * transaction ends, so that two writers of one (topic, key) follow each other: the second waits at its upsert until
 * the first commits (or rolls back, and the increment with it: no hole). Hence, for one (topic, key):
 * <ul>
 *   <li>sequence order is <b>id order</b>: the second writer takes its ids after it got the lock, that is after the
 *       first writer took its ids, which is what the table harvests (cursor and mark) deliver by;</li>
 *   <li>sequence order is <b>commit order</b>: the second writer cannot commit before the first did, which is what
 *       the WAL harvest delivers by.</li>
 * </ul>
 * The sorted order of the upserts makes two publish calls lock the keys they share in the same order, so that they
 * never deadlock on each other; a transaction that publishes several times, the same keys in opposite orders in two
 * concurrent transactions, can still deadlock, and the database then aborts one of them.
 *
 * <p>A message that carries a {@link KeySequence#SEQUENCE} header already is refused: the writer must not forge the
 * number. With the key sequence off ({@link #off()}), {@link #number} returns the messages as they are and runs no
 * statement.
 *
 * <p>Immutable and thread-safe; a connection must not be used by two threads at once.
 */
public final class SqlKeySequence {
    /** Appended to the outbox table's name to name the counter table. */
    public static final String TABLE_SUFFIX = "_key_seq";
    /** The key-sequence DDL template, next to the dialect's {@code schema.sql}. */
    static final String RESOURCE = "key-sequence.sql";

    private static final SqlKeySequence OFF = new SqlKeySequence(null);
    private static final Comparator<TopicKey> ORDER = Comparator.comparing(TopicKey::topic)
            .thenComparing(TopicKey::key);

    /** One database's counter upsert. */
    @FunctionalInterface
    public interface Counter {
        /**
         * Adds {@code ns[i]} to the counter of ({@code topics[i]}, {@code keys[i]}) for every i, creating a counter
         * at {@code ns[i]} if there is none, in the connection's current transaction, taking the rows' locks in the
         * order given (ascending topic, then key) and keeping them until the transaction ends.
         *
         * @param connection the writer's connection
         * @param topics     the topics; no (topic, key) twice
         * @param keys       the keys, parallel to {@code topics}
         * @param ns         what to add to each, at least 1, parallel to {@code topics}
         * @return the counters' new values, parallel to {@code topics}
         * @throws SQLException as the driver throws it
         */
        long[] add(Connection connection, String[] topics, String[] keys, int[] ns) throws SQLException;
    }

    /**
     * A counter that runs one statement per (topic, key), in order.
     *
     * @param one adds {@code n} to the counter of ({@code topic}, {@code key}) and returns its new value
     * @return a counter over it
     */
    public static Counter perKey(PerKey one) {
        Objects.requireNonNull(one, "one must not be null");
        return (connection, topics, keys, ns) -> {
            long[] last = new long[topics.length];
            for (int i = 0; i < topics.length; i++) {
                last[i] = one.add(connection, topics[i], keys[i], ns[i]);
            }
            return last;
        };
    }

    /** One database's counter upsert of one (topic, key) ({@link #perKey}). */
    @FunctionalInterface
    public interface PerKey {
        /**
         * Adds {@code n} to the counter of ({@code topic}, {@code key}), creating it at {@code n} if there is none,
         * in the connection's current transaction, keeping the row locked until the transaction ends.
         *
         * @param connection the writer's connection
         * @param topic      the topic
         * @param key        the key
         * @param n          what to add, at least 1
         * @return the counter's new value
         * @throws SQLException as the driver throws it
         */
        long add(Connection connection, String topic, String key, int n) throws SQLException;
    }

    private record TopicKey(String topic, String key) {
    }

    private final Counter counter;

    private SqlKeySequence(Counter counter) {
        this.counter = counter;
    }

    /**
     * The key sequence off: {@link #number} changes nothing and runs no statement.
     *
     * @return the shared instance
     */
    public static SqlKeySequence off() {
        return OFF;
    }

    /**
     * The key sequence on, with the database's counter upsert.
     *
     * @param counter the upsert; not null
     * @return a key sequence that numbers messages
     * @throws NullPointerException if {@code counter} is null
     */
    public static SqlKeySequence on(Counter counter) {
        return new SqlKeySequence(Objects.requireNonNull(counter, "counter must not be null"));
    }

    /** {@return whether this key sequence numbers messages} */
    public boolean isOn() {
        return counter != null;
    }

    /**
     * Refuses a message that carries a {@link KeySequence#SEQUENCE} header already, when the key sequence is on;
     * part of the checks a publisher makes of every message before it writes anything.
     *
     * @param index   the message's index in its batch
     * @param message the message, checked not null
     * @throws IllegalArgumentException naming the message's index, its topic and the header
     */
    public void check(int index, OutboxMessage message) {
        if (counter != null && hasHeader(message, KeySequence.SEQUENCE)) {
            throw new IllegalArgumentException("message " + index + " (topic '" + message.topic() + "') carries the"
                    + " header " + KeySequence.SEQUENCE + ", which the store's key sequence writes: a writer must not"
                    + " set it");
        }
    }

    private static boolean hasHeader(OutboxMessage message, String name) {
        for (Header h : message.headers()) {
            if (h.name().equals(name)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The messages, each with a {@link KeySequence#SEQUENCE} header appended, after the counter upserts of every
     * distinct (topic, key), in ascending order of topic, then key; or the messages as they are if the key sequence is off.
     * Call it after the checks and before the rows are written, on the writer's connection.
     *
     * @param connection the writer's connection, in its transaction
     * @param messages   the decorated, checked messages
     * @return the messages to write, in the same order
     * @throws SQLException as the driver throws it; the caller's transaction should be rolled back
     */
    public List<OutboxMessage> number(Connection connection, List<OutboxMessage> messages) throws SQLException {
        if (counter == null || messages.isEmpty()) {
            return messages;
        }
        Map<TopicKey, List<Integer>> groups = new TreeMap<>(ORDER);
        for (int i = 0; i < messages.size(); i++) {
            OutboxMessage m = messages.get(i);
            groups.computeIfAbsent(new TopicKey(m.topic(), m.key()), k -> new ArrayList<>()).add(i);
        }
        String[] topics = new String[groups.size()];
        String[] keys = new String[groups.size()];
        int[] ns = new int[groups.size()];
        int g = 0;
        for (Map.Entry<TopicKey, List<Integer>> group : groups.entrySet()) {
            topics[g] = group.getKey().topic();
            keys[g] = group.getKey().key();
            ns[g++] = group.getValue().size();
        }
        long[] last = counter.add(connection, topics, keys, ns);
        List<OutboxMessage> numbered = new ArrayList<>(messages);
        g = 0;
        for (List<Integer> indexes : groups.values()) {
            long next = last[g++] - indexes.size() + 1;
            for (int i : indexes) {
                numbered.set(i, messages.get(i).withHeader(Header.of(KeySequence.SEQUENCE,
                        KeySequence.encode(next++))));
            }
        }
        return numbered;
    }

    /**
     * The counter table's name as it appears in SQL: the outbox table's, quoted and qualified the same way, with
     * {@value #TABLE_SUFFIX} appended.
     *
     * @param names the store's table names
     * @return the counter table's name in SQL
     */
    public static String table(SqlTableNames names) {
        return SqlSideTables.name(names, TABLE_SUFFIX);
    }

    /**
     * Checks that the counter table's name fits the database's identifier limit.
     *
     * @param dialect the database's names
     * @param table   the outbox table's bare name
     * @throws IllegalStateException naming the table and the limit if {@code table + "_key_seq"} is too long
     */
    static void checkTableLength(SqlTableNames.Dialect dialect, String table) {
        SqlSideTables.checkLength(dialect, table, TABLE_SUFFIX, "the key sequence on", "keySequence(false)");
    }
}
