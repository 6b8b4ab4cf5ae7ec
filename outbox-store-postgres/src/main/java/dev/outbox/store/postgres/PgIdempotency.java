package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlIdempotency;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.Set;

/**
 * The idempotency keys' statements on Postgres ({@link SqlIdempotency}): one claim statement for all the keys of a
 * publish call, one round trip,
 * <pre>{@code
 * INSERT INTO <table>_idempotency AS i (idempotency_key, created_at)
 *     SELECT k, now() FROM unnest(?) WITH ORDINALITY AS u(k, n) ORDER BY n
 *     ON CONFLICT (idempotency_key) DO UPDATE SET created_at = now()
 *     WHERE i.created_at < now() - ? * interval '1 microsecond'
 *     RETURNING idempotency_key
 * }</pre>
 * which returns the keys it claimed: inserted, or renewed because their entry had expired. A key within the retention
 * is locked but not changed, and not returned. A concurrent writer of the key waits at the unique index for the
 * first one's transaction to end, then, under READ COMMITTED, sees its committed entry (a duplicate) or, if it rolled
 * back, inserts it. Under REPEATABLE READ or SERIALIZABLE, the second writer fails with a serialization error
 * instead, and its transaction is to be retried. {@code now()} is the writer's transaction's start. Immutable and
 * thread-safe.
 */
final class PgIdempotency {
    private PgIdempotency() {
    }

    /**
     * @param table               the idempotency table as it appears in SQL
     * @param queryTimeoutSeconds the statements' JDBC query timeout, as the publisher's
     * @return the statements
     */
    static SqlIdempotency.Statements statements(String table, int queryTimeoutSeconds) {
        String claim = "INSERT INTO " + table + " AS i (idempotency_key, created_at) SELECT k, now() FROM unnest("
                + "CAST(? AS text[])) WITH ORDINALITY AS u(k, n) ORDER BY n ON CONFLICT (idempotency_key) DO UPDATE"
                + " SET created_at = now() WHERE i.created_at < now() - CAST(? AS bigint) * interval '1 microsecond'"
                + " RETURNING idempotency_key";
        String delete = "DELETE FROM " + table + " WHERE idempotency_key IN (SELECT idempotency_key FROM " + table
                + " WHERE created_at < now() - CAST(? AS bigint) * interval '1 microsecond' LIMIT ?"
                + " FOR UPDATE SKIP LOCKED)";
        return new SqlIdempotency.Statements((connection, keys, retentionMicros) ->
                claim(connection, claim, queryTimeoutSeconds, keys, retentionMicros), delete);
    }

    private static boolean[] claim(Connection connection, String sql, int queryTimeoutSeconds, String[] keys,
                                   long retentionMicros) throws SQLException {
        Set<String> claimed = new HashSet<>();
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setQueryTimeout(queryTimeoutSeconds);
            statement.setArray(1, connection.createArrayOf("text", keys));
            statement.setLong(2, retentionMicros);
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    claimed.add(rs.getString(1));
                }
            }
        }
        boolean[] result = new boolean[keys.length];
        for (int i = 0; i < keys.length; i++) {
            result[i] = claimed.contains(keys[i]);
        }
        return result;
    }
}
