package dev.outbox.benchmarks;

import java.util.SplittableRandom;

/**
 * The outbox table of the benchmark database: dropped and created afresh for each run, and pre-filled with a
 * backlog as fast as the database takes it (Postgres: {@code COPY}; MySQL: multi-row inserts), then analysed
 * so that every run starts from the same state. Not thread-safe.
 */
final class Backlog {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final String[] keys;

    Backlog(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
        this.keys = keys(options.keys);
    }

    static String[] keys(int count) {
        String[] k = new String[count];
        for (int i = 0; i < count; i++) {
            k[i] = "key-" + i;
        }
        return k;
    }

    /** Drops the outbox tables and creates them with the store's own DDL. */
    void reset() {
        env.database().reset();
    }

    /**
     * Resets the table and fills it with {@code rows} rows for {@code topic}: random keys out of --keys, random
     * values of --value-bytes, no headers.
     *
     * @return the seconds the fill took
     */
    double fill(String topic, int rows, long seed) {
        return fill(topic, rows, seed, null);
    }

    /** As {@link #fill(String, int, long)}, every row carrying {@code header} (none if null). */
    double fill(String topic, int rows, long seed, dev.outbox.Header header) {
        return fill(topic, rows, seed, header, 0);
    }

    /** As {@link #fill(String, int, long, dev.outbox.Header)}, each value {@code extraValueBytes} longer. */
    double fill(String topic, int rows, long seed, dev.outbox.Header header, int extraValueBytes) {
        reset();
        return fillAfterReset(topic, rows, seed, header, extraValueBytes);
    }

    /** As {@link #fill(String, int, long)}, into the table created afresh with {@code shards} shards. */
    double fillSharded(String topic, int rows, long seed, int shards) {
        env.database().resetSharded(shards);
        return fillAfterReset(topic, rows, seed, null, 0);
    }

    /** Fills the table as {@link #fill(String, int, long)} does, without resetting it first. */
    double fillAfterReset(String topic, int rows, long seed, dev.outbox.Header header, int extraValueBytes) {
        long started = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        byte[] value = new byte[options.valueBytes + extraValueBytes];
        env.database().fill(topic, rows, new BenchDatabase.RowSource() {
            @Override
            public String nextKey() {
                return keys[random.nextInt(keys.length)];
            }

            @Override
            public byte[] nextValue() {
                random.nextBytes(value);
                return value;
            }

            @Override
            public dev.outbox.Header header() {
                return header;
            }
        });
        return (System.nanoTime() - started) / 1e9;
    }

    /** Resets the tables and creates the WAL harvest's functions and a new slot (Postgres only). */
    void resetWal() {
        env.database().resetWal();
    }

    /**
     * {@link #resetWal()}, then emits {@code rows} messages for {@code topic} into the WAL, after the slot was
     * created: random keys out of --keys, values of --value-bytes, no headers.
     *
     * @return the seconds the fill took
     */
    double fillWal(String topic, int rows, long seed) {
        resetWal();
        long started = System.nanoTime();
        env.database().fillWal(topic, rows, options.keys, options.valueBytes, seed);
        return (System.nanoTime() - started) / 1e9;
    }

    /** Rows in the outbox table, counted exactly. */
    long count() {
        return env.database().count();
    }
}
