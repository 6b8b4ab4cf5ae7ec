package dev.outbox.store.postgres;

import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.store.sql.SqlChecks;
import dev.outbox.store.sql.SqlFencing;
import dev.outbox.store.sql.SqlTransactions;
import org.jdbi.v3.core.argument.Argument;
import org.jdbi.v3.core.statement.SqlStatement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.UUID;

/**
 * How Postgres harvests its outbox table: the mark (one {@code UPDATE ... RETURNING}, fenced in the same statement)
 * and the cursor read, whose late-commit rule is the snapshot's horizon: each read reports, from its one snapshot,
 * the next transaction id not yet assigned ({@link ReadResult#gapToken()}, see {@link #gapToken}) and the
 * snapshot's {@code xmin} ({@link ReadResult#horizon()}); a gap is final once a later read's horizon reaches its
 * token. See {@link PostgresStore}'s "Statements" and "Late commits". Immutable and thread-safe.
 */
final class PostgresHarvest {
    private static final Logger log = LoggerFactory.getLogger(PostgresStore.class);

    private final SqlTransactions tx;
    private final PostgresStatements sql;
    private final int maxKeyLength;
    private final String table;

    PostgresHarvest(SqlTransactions tx, PostgresStatements sql, int maxKeyLength, String table) {
        this.tx = tx;
        this.sql = sql;
        this.maxKeyLength = maxKeyLength;
        this.table = table;
    }

    /** Marks up to {@code limit} rows for {@code leaderId}, fenced unless {@code fence} is unfenced. */
    MarkResult mark(UUID leaderId, int limit, long fence, String operation) {
        boolean fenced = fence != SqlFencing.UNFENCED;
        int p = fenced ? 1 : 0;
        return tx.inTransaction(operation, sql.markSettings(), handle -> {
            List<MarkedRow> rows = new ArrayList<>();
            Long[] seen = {null};
            var query = handle.createQuery(fenced ? sql.fencedMark() : sql.mark());
            if (fenced) {
                query.bind(0, fence);
            }
            query.bind(p, uuid(leaderId))
                    .bind(p + 1, uuid(leaderId))
                    .bind(p + 2, limit)
                    .scanResultSet((supplier, context) -> {
                        var rs = supplier.get();
                        while (rs.next()) {
                            if (fenced) {
                                seen[0] = (Long) rs.getObject(1);
                                if (rs.getObject(2) == null) {
                                    continue; // the row of the epoch when nothing was marked
                                }
                            }
                            rows.add(RowReader.read(rs, p, maxKeyLength));
                        }
                        return null;
                    });
            if (fenced) {
                SqlFencing.check(operation, fence, seen[0]);
            }
            return SqlChecks.marked(log, table, rows);
        });
    }

    /** The cursor read: the rows above {@code after} and in {@code ranges} (merged), and the snapshot's horizon. */
    ReadResult read(long after, List<IdRange> ranges, int limit, String operation) {
        Long[] from = ranges.stream().map(IdRange::from).toArray(Long[]::new);
        Long[] to = ranges.stream().map(IdRange::to).toArray(Long[]::new);
        return tx.inTransaction(operation, sql.readSettings(), handle -> {
            TreeMap<Long, MarkedRow> rows = new TreeMap<>();
            List<Long> withoutMessageId = new ArrayList<>();
            long[] snapshot = new long[3];
            bindRead(handle.createQuery(sql.read()), after, from, to, limit)
                    .scanResultSet((supplier, context) -> {
                        var rs = supplier.get();
                        while (rs.next()) {
                            snapshot[0] = rs.getLong(1);
                            snapshot[1] = rs.getLong(2);
                            snapshot[2] = rs.getInt(3);
                            if (rs.getObject(4) == null) {
                                continue; // the snapshot's row when nothing was read
                            }
                            MarkedRow row = RowReader.read(rs, 3, maxKeyLength);
                            rows.put(row.id(), row);
                            if (rs.getObject(13) == null) {
                                withoutMessageId.add(row.id());
                            }
                        }
                        return null;
                    });
            if (!withoutMessageId.isEmpty()) {
                // Rare: rows written before the message_id column. Store their ids, then return them as stored (a
                // row deleted meanwhile is not returned).
                withoutMessageId.forEach(rows::remove);
                handle.createQuery(sql.fillMessageIds()).bind(0, bigints(withoutMessageId.toArray(new Long[0])))
                        .scanResultSet((supplier, context) -> {
                            var rs = supplier.get();
                            while (rs.next()) {
                                MarkedRow row = RowReader.read(rs, maxKeyLength);
                                rows.put(row.id(), row);
                            }
                            return null;
                        });
            }
            return new ReadResult(SqlChecks.marked(log, table, rows.values()), gapToken(snapshot[1], (int) snapshot[2]),
                    snapshot[0]);
        });
    }

    /**
     * The gap token of a read: the first transaction id not yet assigned when the read's snapshot had been taken,
     * as a 64-bit {@code xid8}, from the snapshot's {@code xmax} and {@code age3 = age('3'::xid)}.
     *
     * <p>Not the snapshot's {@code xmax}: that is one past the latest <em>completed</em> transaction id, and a
     * transaction that took its id (and then an outbox id below a row the read returned) after the last one that
     * completed has an id at or above {@code xmax}. It is not in the snapshot's list of running transactions either,
     * so a later snapshot's {@code xmin} can pass it while it is still running (tested by
     * {@code PostgresStoreReadTest}). {@code age(xid)} counts from the transaction's own id or, in a transaction that
     * has none (as this read has when it calls it), from the next id to be assigned, read at its first call in the
     * transaction: during the read statement, after its snapshot. Every transaction that took an outbox id below the
     * read's highest row took its transaction id earlier (the id column's default takes the transaction id first),
     * so its id is below the token. {@code age} is 32 bits; the token is {@code xmax} moved forward by the (small,
     * non-negative) distance from {@code xmax} to that next id, modulo 2<sup>32</sup>.
     */
    static long gapToken(long xmax, int age3) {
        long next32 = (age3 + 3L) & 0xFFFF_FFFFL;
        return xmax + ((next32 - (xmax & 0xFFFF_FFFFL)) & 0xFFFF_FFFFL);
    }

    /** The plan Postgres chooses for the read right now, under the same settings; for tests and diagnosis. */
    String explainRead(long after, List<IdRange> ranges, int limit) {
        Long[] from = ranges.stream().map(IdRange::from).toArray(Long[]::new);
        Long[] to = ranges.stream().map(IdRange::to).toArray(Long[]::new);
        return tx.inTransaction("explaining the read of " + table, sql.readSettings(), handle ->
                String.join("\n", bindRead(handle.createQuery("EXPLAIN " + sql.read()), after, from, to, limit)
                        .mapTo(String.class).list()));
    }

    /** The plan Postgres chooses for the mark right now, under the same settings; for tests and diagnosis. */
    String explainMark(UUID leaderId, int limit) {
        return tx.inTransaction("explaining the mark of " + table, sql.markSettings(), handle ->
                String.join("\n", handle.createQuery("EXPLAIN " + sql.mark())
                        .bind(0, uuid(leaderId)).bind(1, uuid(leaderId)).bind(2, limit)
                        .mapTo(String.class).list()));
    }

    private static <S extends SqlStatement<S>> S bindRead(S statement, long after, Long[] from, Long[] to, int limit) {
        return statement.bind(0, after).bind(1, limit).bind(2, bigints(from)).bind(3, bigints(to)).bind(4, after)
                .bind(5, limit);
    }

    static Argument uuid(UUID value) {
        return (position, statement, context) -> statement.setObject(position, value);
    }

    static Argument bigints(Long[] values) {
        return (position, statement, context) ->
                statement.setArray(position, statement.getConnection().createArrayOf("bigint", values));
    }
}
