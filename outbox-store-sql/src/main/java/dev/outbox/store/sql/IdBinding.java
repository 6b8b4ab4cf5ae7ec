package dev.outbox.store.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * How a dialect binds a batch of ids, and runs a {@link SqlWrite} on them: as {@linkplain #arrays arrays} (one
 * statement per call, whatever the batch's size: Postgres' {@code = ANY(?)}, {@code unnest(?, ?)}) or as
 * {@linkplain #lists lists} ({@code IN (?, ?, ...)}, a statement per chunk of at most a number of ids, all in the
 * call's transaction: MySQL). Immutable and thread-safe.
 */
public final class IdBinding {
    private final String idType;
    private final String valueType;
    private final int maxIds;

    private IdBinding(String idType, String valueType, int maxIds) {
        this.idType = idType;
        this.valueType = valueType;
        this.maxIds = maxIds;
    }

    /**
     * Ids as one array parameter, and an id's values (a failure's time, a park's reason) as a parallel array.
     *
     * @param idType    the SQL type name of the ids' array elements, as {@link Connection#createArrayOf} takes it
     * @param valueType the SQL type name of the values' array elements
     * @return the binding; its {@link #maxIds()} is unbounded ({@link Integer#MAX_VALUE})
     * @throws NullPointerException if {@code idType} or {@code valueType} is null
     */
    public static IdBinding arrays(String idType, String valueType) {
        return new IdBinding(Objects.requireNonNull(idType, "idType must not be null"),
                Objects.requireNonNull(valueType, "valueType must not be null"), Integer.MAX_VALUE);
    }

    /**
     * Ids as placeholders of an {@code IN} list, at most {@code maxIds} bound parameters per statement (half as many
     * ids where each id also binds a value).
     *
     * @param maxIds the most parameters one statement binds, at least 2 (the database's limit, or a lower one)
     * @return the binding
     * @throws IllegalArgumentException naming the count if it is below 2
     */
    public static IdBinding lists(int maxIds) {
        if (maxIds < 2) {
            throw new IllegalArgumentException("maxIds must be at least 2: " + maxIds);
        }
        return new IdBinding(null, null, maxIds);
    }

    /**
     * Whether ids are bound as one array.
     *
     * @return true for {@link #arrays(String, String)}, false for {@link #lists(int)}
     */
    public boolean arrays() {
        return idType != null;
    }

    /**
     * The most ids one statement binds: unbounded for arrays.
     *
     * @return the {@code maxIds} of {@link #lists(int)}, or {@link Integer#MAX_VALUE} for arrays
     */

    public int maxIds() {
        return maxIds;
    }

    /**
     * Runs {@code write} on {@code ids} in the connection's current transaction; fenced by {@code fence} with the
     * write's fenced statement unless {@code fence} is {@link SqlFencing#UNFENCED} or the write has none (the caller
     * then fenced the transaction). Returns the rows the last statement changed, for an unfenced write.
     *
     * @param ids    ascending, without duplicates
     * @param values each id's value for {@link SqlWrite.Kind#PAIRS} statements, else null
     * @param leader the leader id for {@link SqlWrite.Kind#LEADER_THEN_IDS} statements, else null
     */
    int run(Connection connection, SqlTransactions tx, SqlColumns columns, SqlWrite write, List<Long> ids,
            Map<Long, ?> values, UUID leader, long fence, String operation) throws SQLException {
        int size = arrays() ? Math.max(1, ids.size()) : write.hasPairs() ? maxIds / 2 : maxIds;
        boolean fenced = fence != SqlFencing.UNFENCED && write.fenced() != null;
        int changed = 0;
        for (int from = 0; from < ids.size(); from += size) {
            List<Long> batch = ids.subList(from, Math.min(ids.size(), from + size));
            if (fenced) {
                SqlWrite.Step step = write.steps().get(0);
                try (PreparedStatement statement = tx.prepare(connection, expand(write.fenced(), step, batch.size()))) {
                    statement.setLong(1, fence);
                    bind(connection, statement, 2, step.kind(), batch, values, leader, columns);
                    SqlFencing.check(operation, fence, firstLong(statement));
                }
                continue;
            }
            for (SqlWrite.Step step : write.steps()) {
                try (PreparedStatement statement = tx.prepare(connection, expand(step.sql(), step, batch.size()))) {
                    bind(connection, statement, 1, step.kind(), batch, values, leader, columns);
                    if (step.kind() == SqlWrite.Kind.LOCK) {
                        batch = presentIds(statement);
                        if (batch.isEmpty()) {
                            break;
                        }
                    } else {
                        int count = statement.executeUpdate();
                        if (step == write.steps().get(write.steps().size() - 1)) {
                            changed += count;
                        }
                    }
                }
            }
        }
        return changed;
    }

    /** {@code sql} with its {@code ${ids}} and {@code ${pairs}} expanded for {@code count} ids, for lists. */
    private String expand(String sql, SqlWrite.Step step, int count) {
        if (arrays()) {
            return sql;
        }
        StringBuilder ids = new StringBuilder(count * 3);
        StringBuilder pairs = new StringBuilder();
        for (int i = 0; i < count; i++) {
            ids.append(i == 0 ? "?" : ", ?");
            if (step.pair() != null) {
                pairs.append(step.pair());
            }
        }
        return sql.replace("${pairs}", pairs).replace("${ids}", ids);
    }

    private void bind(Connection connection, PreparedStatement statement, int first, SqlWrite.Kind kind,
                      List<Long> ids, Map<Long, ?> values, UUID leader, SqlColumns columns) throws SQLException {
        int p = first;
        if (kind == SqlWrite.Kind.LEADER_THEN_IDS) {
            columns.bindUuid(statement, p++, leader);
        }
        if (arrays()) {
            statement.setArray(p++, connection.createArrayOf(idType, ids.toArray(new Long[0])));
            if (kind == SqlWrite.Kind.PAIRS) {
                Object[] array = new Object[ids.size()];
                for (int i = 0; i < array.length; i++) {
                    array[i] = values.get(ids.get(i));
                }
                statement.setArray(p, connection.createArrayOf(valueType, array));
            }
            return;
        }
        if (kind == SqlWrite.Kind.PAIRS) {
            for (Long id : ids) {
                statement.setLong(p++, id);
                statement.setObject(p++, values.get(id));
            }
        }
        for (Long id : ids) {
            statement.setLong(p++, id);
        }
    }

    private static List<Long> presentIds(PreparedStatement statement) throws SQLException {
        List<Long> present = new ArrayList<>();
        try (ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                present.add(rs.getLong(1));
            }
        }
        return present;
    }

    /** The first column of the statement's first row as a long, or null if it is null or there is no row. */
    static Long firstLong(PreparedStatement statement) throws SQLException {
        try (ResultSet rs = statement.executeQuery()) {
            if (!rs.next()) {
                return null;
            }
            long value = rs.getLong(1);
            return rs.wasNull() ? null : value;
        }
    }
}
