package dev.outbox.store.sql;

import dev.outbox.Header;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The parked area of a SQL outbox as operators see it: listing, filtering, counting, reading and discarding parked
 * rows, and the parked keys that held keys derive from; one statement each, from the dialect's
 * {@link SqlStatements}. Immutable and thread-safe.
 */
final class ParkedRows {
    private final SqlTransactions tx;
    private final SqlStatements sql;
    private final SqlColumns columns;
    private final IdBinding binding;
    private final String table;

    ParkedRows(SqlTransactions tx, SqlStatements sql, SqlColumns columns, IdBinding binding, String table) {
        this.tx = tx;
        this.sql = sql;
        this.columns = columns;
        this.binding = binding;
        this.table = table;
    }

    List<ParkedRecord> parked(int limit) {
        SqlChecks.limit(limit);
        return tx.inTransaction("listing parked rows of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.parked())) {
                statement.setInt(1, limit);
                return records(statement);
            }
        });
    }

    List<ParkedRecord> parked(ParkedQuery query) {
        Objects.requireNonNull(query, "query must not be null");
        return tx.inTransaction("listing parked rows of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.parkedFiltered())) {
                bindFilter(statement, query);
                statement.setInt(14, query.limit());
                return records(statement);
            }
        });
    }

    long parkedCount(ParkedQuery query) {
        Objects.requireNonNull(query, "query must not be null");
        return tx.inTransaction("counting parked rows of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.parkedFilteredCount())) {
                bindFilter(statement, query.after(0));
                return IdBinding.firstLong(statement);
            }
        });
    }

    Optional<ParkedMessage> parkedMessage(long id) {
        return tx.inTransaction("reading parked row " + id + " of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.parkedMessage())) {
                statement.setLong(1, id);
                try (ResultSet rs = statement.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    List<Header> headers = List.of();
                    String problem = null;
                    try {
                        headers = columns.headers(rs, 9);
                    } catch (IllegalArgumentException e) {
                        problem = e.getMessage();
                    }
                    return Optional.of(new ParkedMessage(record(rs), columns.instant(rs, 7), rs.getBytes(8), headers,
                            problem));
                }
            }
        });
    }

    int discard(Collection<Long> ids) {
        List<Long> sorted = SqlChecks.ids("ids", ids);
        if (sorted.isEmpty()) {
            return 0;
        }
        return tx.inTransaction("discarding " + sorted.size() + " parked rows of " + table, sql.prologue(),
                handle -> binding.run(handle.getConnection(), tx, columns, sql.discard(), sorted, null, null,
                        SqlFencing.UNFENCED, "discard"));
    }

    Set<String> parkedKeys() {
        return tx.inTransaction("listing the keys of " + table, sql.prologue(), handle -> {
            Set<String> keys = new HashSet<>();
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.parkedKeys());
                 ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    keys.add(rs.getString(1));
                }
            }
            return keys;
        });
    }

    long parkedCount() {
        return tx.inTransaction("counting the rows of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.parkedCount())) {
                return IdBinding.firstLong(statement);
            }
        });
    }

    /** Binds the filter's 13 parameters: after an id, then each condition twice (null for none). */
    private void bindFilter(PreparedStatement statement, ParkedQuery q) throws SQLException {
        statement.setLong(1, q.afterId());
        int p = 2;
        for (String text : new String[]{q.topic(), q.key(), q.reasonContains()}) {
            statement.setString(p++, text);
            statement.setString(p++, text);
        }
        columns.bindUuid(statement, p++, q.messageId());
        columns.bindUuid(statement, p++, q.messageId());
        columns.bindInstant(statement, p++, q.parkedFrom());
        columns.bindInstant(statement, p++, q.parkedFrom());
        columns.bindInstant(statement, p++, q.parkedBefore());
        columns.bindInstant(statement, p, q.parkedBefore());
    }

    private List<ParkedRecord> records(PreparedStatement statement) throws SQLException {
        List<ParkedRecord> records = new ArrayList<>();
        try (ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                records.add(record(rs));
            }
        }
        return records;
    }

    /** A parked row's summary from columns 1 to 6 (id to parked time) and the column message_id. */
    private ParkedRecord record(ResultSet rs) throws SQLException {
        return new ParkedRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getString(5),
                columns.instant(rs, 6), columns.uuid(rs, "message_id"));
    }
}
