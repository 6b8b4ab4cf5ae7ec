package dev.outbox.benchmarks;

import dev.outbox.Header;
import dev.outbox.spi.Store;
import dev.outbox.testservers.JdbcServer;

import javax.sql.DataSource;
import java.util.Map;

/**
 * The database a run measures, with what the scenarios need beyond the {@link Store} port: a pool, a way to
 * empty the outbox and to pre-fill it fast, and the settings worth reporting. Implementations are thread-safe
 * once built.
 */
interface BenchDatabase extends AutoCloseable {
    /** {@code postgres}, {@code mysql} or {@code mariadb}. */
    String name();

    JdbcServer server();

    String jdbcUrl();

    DataSource pool();

    Store store();

    /** Drops the outbox tables and creates them with the store's own DDL. */
    void reset();

    /**
     * The same outbox with no commit wake-ups (the harvest polls, as before the wake-ups existed); {@link #store()}
     * where the store has none.
     */
    default Store pollingStore() {
        return store();
    }

    /** The same outbox table split into {@code shards} shards (after {@link #resetSharded}). */
    Store shardedStore(int shards);

    /** Drops the outbox tables and creates them sharded, with {@link #shardedStore}'s own DDL. */
    void resetSharded(int shards);

    /** The same outbox with the WAL harvest (Postgres only). */
    default Store walStore() {
        throw new UnsupportedOperationException("the WAL harvest needs --database postgres, not " + name());
    }

    /** {@link #reset()}, then the WAL harvest's functions, slot and publication (Postgres only). */
    default void resetWal() {
        throw new UnsupportedOperationException("the WAL harvest needs --database postgres, not " + name());
    }

    /**
     * Emits {@code rows} messages of {@code topic} into the WAL after {@link #resetWal()}, as fast as the database
     * takes them (Postgres only).
     */
    default void fillWal(String topic, int rows, int keys, int valueBytes, long seed) {
        throw new UnsupportedOperationException("the WAL harvest needs --database postgres, not " + name());
    }

    /**
     * Fills the (just reset) outbox with {@code rows} rows of {@code topic}, keys drawn by {@code keyOf}, values
     * by {@code valueOf}, as fast as the database takes them, then refreshes its statistics.
     */
    void fill(String topic, int rows, RowSource source);

    long count();

    /** The server settings that matter for these measurements. */
    Map<String, String> settings();

    /** Cumulative server counters worth a delta over a drain (what it waited for); none by default. */
    default Map<String, Long> counters() {
        return Map.of();
    }

    /** The arguments a {@link LeaderProcess} needs to build the same store, all but the password. */
    Map<String, String> childProperties();

    /**
     * The password of the database user, for a child JVM: passed in its environment
     * ({@link LeaderProcess#PASSWORD_VARIABLE}), never as a system property on its command line.
     */
    String password();

    @Override
    void close();

    /** Produces the backlog's rows in order. Not thread-safe. */
    interface RowSource {
        String nextKey();

        /** The next value; the array may be reused by the next call. */
        byte[] nextValue();

        /**
         * The one header every row carries (as a decorator would have written it), or null for none. Its value
         * must be printable ASCII without backslash, quote, comma, brace or space (a {@code traceparent} is).
         */
        default Header header() {
            return null;
        }
    }
}
