package dev.outbox.benchmarks;

import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.SplittableRandom;

/**
 * The outbox table of the benchmark database: dropped and created afresh for each run, and pre-filled with a
 * backlog through {@code COPY} (the fastest way in), then vacuumed and analysed so that every run starts from
 * the same state. Not thread-safe.
 */
final class Backlog {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

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
        BenchEnvironment.execute(env.pool(), "DROP TABLE IF EXISTS " + env.store().table() + ", "
                + env.store().parkedTable());
        env.store().createSchema();
    }

    /**
     * Resets the table and fills it with {@code rows} rows for {@code topic}: random keys out of --keys, random
     * values of --value-bytes, no headers.
     *
     * @return the seconds the fill took (COPY, then VACUUM ANALYZE)
     */
    double fill(String topic, int rows, long seed) {
        reset();
        long started = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        byte[] value = new byte[options.valueBytes];
        String sql = "COPY " + env.store().table() + " (topic, key, value) FROM STDIN";
        try (Connection c = env.pool().getConnection()) {
            c.setAutoCommit(true);
            CopyIn in = c.unwrap(PGConnection.class).getCopyAPI().copyIn(sql);
            try {
                StringBuilder line = new StringBuilder(64 * 1024);
                byte[] topicBytes = topic.getBytes(StandardCharsets.UTF_8);
                for (int i = 0; i < rows; i++) {
                    random.nextBytes(value);
                    line.append(topic, 0, topic.length()).append('\t')
                            .append(keys[random.nextInt(keys.length)]).append("\t\\\\x");
                    for (byte b : value) {
                        line.append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
                    }
                    line.append('\n');
                    if (line.length() > 60_000 || i == rows - 1) {
                        byte[] bytes = line.toString().getBytes(StandardCharsets.US_ASCII);
                        in.writeToCopy(bytes, 0, bytes.length);
                        line.setLength(0);
                    }
                }
                if (topicBytes.length != topic.length()) {
                    throw new IllegalArgumentException("topic must be ASCII: " + topic);
                }
                in.endCopy();
            } finally {
                if (in.isActive()) {
                    in.cancelCopy();
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("COPY of " + rows + " rows failed: " + e.getMessage(), e);
        }
        BenchEnvironment.execute(env.pool(), "VACUUM ANALYZE " + env.store().table());
        return (System.nanoTime() - started) / 1e9;
    }

    /** Rows in the outbox table, counted exactly. */
    long count() {
        return BenchEnvironment.queryLong(env.pool(), "SELECT count(*) FROM " + env.store().table());
    }
}
