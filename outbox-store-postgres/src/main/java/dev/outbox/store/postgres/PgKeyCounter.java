package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlKeySequence;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;

/**
 * The key sequence's counter upsert on Postgres: one statement for all the (topic, key) groups of a publish call,
 * one round trip,
 * <pre>{@code
 * INSERT INTO <table>_key_seq AS s (topic, key, seq)
 *     SELECT topic, key, n FROM unnest(?, ?, ?) WITH ORDINALITY AS u(topic, key, n, i) ORDER BY i
 *     ON CONFLICT (topic, key) DO UPDATE SET seq = s.seq + EXCLUDED.seq RETURNING topic, key, seq
 * }</pre>
 * The insert takes the rows in the order of the arrays ({@code ORDER BY i}: the order {@link SqlKeySequence} sorts
 * them in), and with each row its lock, held until the transaction ends. A concurrent writer of a key waits at that
 * row for the first one's transaction to end, then adds to the value it committed (or, if it rolled back, inserts
 * the row itself). Under REPEATABLE READ or SERIALIZABLE, the second writer fails with a serialization error instead,
 * and its transaction is to be retried. A plain-SQL writer may run the single-row form for each key. Immutable and
 * thread-safe.
 */
final class PgKeyCounter implements SqlKeySequence.Counter {
    private final String sql;
    private final int queryTimeoutSeconds;

    /**
     * @param table               the counter table as it appears in SQL ({@link SqlKeySequence#table})
     * @param queryTimeoutSeconds the statement's JDBC query timeout, as the publisher's
     */
    PgKeyCounter(String table, int queryTimeoutSeconds) {
        this.sql = "INSERT INTO " + table + " AS s (topic, key, seq) SELECT topic, key, n FROM unnest("
                + "CAST(? AS text[]), CAST(? AS text[]), CAST(? AS bigint[])) WITH ORDINALITY AS u(topic, key, n, i)"
                + " ORDER BY i"
                + " ON CONFLICT (topic, key) DO UPDATE SET seq = s.seq + EXCLUDED.seq RETURNING topic, key, seq";
        this.queryTimeoutSeconds = queryTimeoutSeconds;
    }

    @Override
    public long[] add(Connection connection, String[] topics, String[] keys, int[] ns) throws SQLException {
        Long[] increments = new Long[ns.length];
        Map<String, Map<String, Integer>> index = new HashMap<>();
        for (int i = 0; i < ns.length; i++) {
            increments[i] = (long) ns[i];
            index.computeIfAbsent(topics[i], t -> new HashMap<>()).put(keys[i], i);
        }
        long[] last = new long[ns.length];
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setQueryTimeout(queryTimeoutSeconds);
            statement.setArray(1, connection.createArrayOf("text", topics));
            statement.setArray(2, connection.createArrayOf("text", keys));
            statement.setArray(3, connection.createArrayOf("bigint", increments));
            int rows = 0;
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    last[index.get(rs.getString(1)).get(rs.getString(2))] = rs.getLong(3);
                    rows++;
                }
            }
            if (rows != ns.length) {
                throw new SQLException("the key sequence's upsert returned " + rows + " row(s) for " + ns.length
                        + " (topic, key) pair(s)");
            }
        }
        return last;
    }
}
