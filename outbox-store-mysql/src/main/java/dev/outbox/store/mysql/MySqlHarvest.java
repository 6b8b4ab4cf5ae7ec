package dev.outbox.store.mysql;

import dev.outbox.MessageIds;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.store.sql.LateCommitWindow;
import dev.outbox.store.sql.SqlChecks;
import dev.outbox.store.sql.SqlFencing;
import dev.outbox.store.sql.SqlTransactions;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * How MySQL and MariaDB harvest the outbox table: the mark (three statements in one READ COMMITTED transaction, since
 * there is no {@code UPDATE ... RETURNING}) and the cursor read, whose late-commit rule is a time window
 * ({@link LateCommitWindow}, {@linkplain MySqlStore.Builder#lateCommitWindow set by the builder}): InnoDB offers no
 * unprivileged way to learn the oldest running transaction. Rows older than the
 * {@code message_id} column are given one, stored in the call's transaction before they are returned. See
 * {@link MySqlStore}'s "Mark without RETURNING" and "Read". Immutable and thread-safe.
 */
final class MySqlHarvest {
    private static final Logger log = LoggerFactory.getLogger(MySqlStore.class);
    /** The {@code leader_id} of a row nobody has marked. */
    static final UUID NIL = new UUID(0, 0);

    private final SqlTransactions tx;
    private final MySqlStatements sql;
    private final String fenceLock;
    private final int maxKeyLength;
    private final String table;
    private final LateCommitWindow window;

    MySqlHarvest(SqlTransactions tx, MySqlStatements sql, String fenceLock, int maxKeyLength, String table,
                 LateCommitWindow window) {
        this.tx = tx;
        this.sql = sql;
        this.fenceLock = fenceLock;
        this.maxKeyLength = maxKeyLength;
        this.table = table;
        this.window = window;
    }

    /**
     * Marks up to {@code limit} rows for {@code leaderId}, fenced by a locking read of the leader row first unless
     * {@code fence} is unfenced; runs {@code whileLocked} after the update and before the commit (for tests).
     */
    MarkResult mark(UUID leaderId, int limit, long fence, Consumer<Handle> whileLocked, String operation) {
        byte[] leader = RowReader.bytes(leaderId);
        return tx.inTransaction(operation, MySqlStatements.READ_COMMITTED, handle -> {
            SqlFencing.lock(handle.getConnection(), tx, fenceLock, operation, fence);
            List<Long> candidates = tx.timed(handle.createQuery(sql.candidates()))
                    .bind(0, leader).bind(1, limit).mapTo(Long.class).list();
            if (candidates.isEmpty()) {
                return MarkResult.of(List.of());
            }
            List<MarkedRow> rows = new ArrayList<>(candidates.size());
            List<Long> marked = new ArrayList<>(candidates.size());
            Map<Long, UUID> unnamed = new TreeMap<>();
            for (List<Long> chunk : InLists.chunks(candidates, MySqlStore.MAX_IDS_PER_STATEMENT)) {
                InLists.bind(tx.timed(handle.createQuery(InLists.in(sql.markLock(), chunk.size()))), 0, chunk)
                        .scanResultSet((supplier, context) -> {
                            var rs = supplier.get();
                            while (rs.next()) {
                                if (Arrays.equals(leader, rs.getBytes(7))) {
                                    continue; // a concurrent mark with the same leader id took it
                                }
                                MarkedRow row = readable(RowReader.read(rs, leaderId, maxKeyLength), unnamed);
                                rows.add(row);
                                marked.add(row.id());
                            }
                            return null;
                        });
            }
            for (List<Long> chunk : InLists.chunks(marked, MySqlStore.MAX_IDS_PER_STATEMENT)) {
                InLists.bind(tx.timed(handle.createUpdate(InLists.in(sql.markUpdate(), chunk.size()))).bind(0, leader),
                        1, chunk).execute();
            }
            assignMessageIds(handle, unnamed);
            whileLocked.accept(handle);
            return SqlChecks.marked(log, table, rows);
        });
    }

    /**
     * One consistent, non-locking read of the harvest's index (several for more than
     * {@value MySqlStore#MAX_RECHECK_RANGES_PER_STATEMENT} recheck ranges); the ordinals of the result are
     * milliseconds of a monotonic clock, {@code gapToken} exceeding {@code horizon} by the late-commit window and the
     * time the read took.
     */
    ReadResult read(long after, List<IdRange> ranges, int limit, String operation) {
        long horizon = window.horizon();
        MarkResult rows = tx.inTransaction(operation, MySqlStatements.READ_COMMITTED,
                handle -> readRows(handle, after, ranges, limit));
        return window.result(rows, horizon);
    }

    /** The rows of {@link #read}: one statement per chunk of ranges, the highest ids first, the lowest kept. */
    private MarkResult readRows(Handle handle, long after, List<IdRange> ranges, int limit) {
        TreeMap<Long, MarkedRow> read = new TreeMap<>();
        List<List<IdRange>> chunks = new ArrayList<>();
        List<IdRange> descending = new ArrayList<>(ranges);
        descending.sort(Comparator.comparingLong(IdRange::from).reversed());
        int perStatement = MySqlStore.MAX_RECHECK_RANGES_PER_STATEMENT;
        for (int from = 0; from == 0 || from < descending.size(); from += perStatement) {
            chunks.add(descending.subList(from, Math.min(descending.size(), from + perStatement)));
        }
        Map<Long, UUID> unnamed = new TreeMap<>();
        for (int c = 0; c < chunks.size(); c++) {
            List<IdRange> chunk = chunks.get(c);
            boolean head = c == 0;
            var query = tx.timed(handle.createQuery(sql.readSql(head, chunk.size())));
            int p = 0;
            if (head) {
                query.bind(p++, after);
            }
            for (IdRange range : chunk) {
                query.bind(p++, range.from()).bind(p++, range.to());
            }
            query.bind(p, limit).scanResultSet((supplier, context) -> {
                var rs = supplier.get();
                while (rs.next()) {
                    if (read.containsKey(rs.getLong(1))) {
                        continue; // a range above the cursor: the head statement read it already
                    }
                    UUID leader = RowReader.uuid(rs.getBytes(7));
                    MarkedRow row = RowReader.read(rs, NIL.equals(leader) ? null : leader, maxKeyLength);
                    read.put(row.id(), readable(row, unnamed));
                }
                return null;
            });
        }
        while (read.size() > limit) {
            unnamed.remove(read.pollLastEntry().getKey());
        }
        List<MarkedRow> rows = new ArrayList<>(read.values());
        if (!unnamed.isEmpty()) {
            assignMessageIds(handle, unnamed);
            rows = withStoredMessageIds(handle, rows, unnamed.keySet());
        }
        return SqlChecks.marked(log, table, rows);
    }

    /**
     * {@code rows} with the message ids the database holds for {@code ids}, which this read has just stored unless
     * a concurrent call stored others first (a read locks no rows until it stores ids).
     */
    private List<MarkedRow> withStoredMessageIds(Handle handle, List<MarkedRow> rows, Collection<Long> ids) {
        Map<Long, UUID> stored = new TreeMap<>();
        for (List<Long> chunk : InLists.chunks(new ArrayList<>(ids), MySqlStore.MAX_IDS_PER_STATEMENT)) {
            InLists.bind(tx.timed(handle.createQuery(InLists.in(sql.storedIds(), chunk.size()))), 0, chunk)
                    .map((rs, ctx) -> {
                        stored.put(rs.getLong(1), RowReader.uuid(rs.getBytes(2)));
                        return null;
                    }).list();
        }
        List<MarkedRow> out = new ArrayList<>(rows.size());
        for (MarkedRow row : rows) {
            UUID id = stored.get(row.id());
            if (id != null && row instanceof MarkedRow.Readable readable && !id.equals(readable.record().messageId())) {
                OutboxRecord r = readable.record();
                row = new MarkedRow.Readable(new OutboxRecord(r.id(), r.createdAt(), r.message(), r.attempts(),
                        r.leaderId(), id, r.nextAttemptAt()));
            }
            out.add(row);
        }
        return out;
    }

    /** {@code row}, given a new message id (noted in {@code unnamed}) if it is a record without one. */
    private static MarkedRow readable(MarkedRow row, Map<Long, UUID> unnamed) {
        if (row instanceof MarkedRow.Readable readable && readable.record().messageId() == null) {
            OutboxRecord record = readable.record();
            UUID id = MessageIds.next();
            unnamed.put(record.id(), id);
            return new MarkedRow.Readable(new OutboxRecord(record.id(), record.createdAt(), record.message(),
                    record.attempts(), record.leaderId(), id, record.nextAttemptAt()));
        }
        return row;
    }

    /**
     * Stores the message ids the mark (or read) gave to rows that had none (rows older than the column), in its
     * transaction, before any of them is published; a row that has one by now keeps it.
     */
    private void assignMessageIds(Handle handle, Map<Long, UUID> unnamed) {
        List<Long> ids = new ArrayList<>(unnamed.keySet());
        for (List<Long> chunk : InLists.chunks(ids, MySqlStore.MAX_IDS_PER_STATEMENT / 2)) {
            var update = tx.timed(handle.createUpdate(InLists.in(sql.assignIds(), chunk.size(), " WHEN ? THEN ?")));
            int p = 0;
            for (Long id : chunk) {
                update.bind(p++, id.longValue()).bind(p++, RowReader.bytes(unnamed.get(id)));
            }
            InLists.bind(update, p, chunk).execute();
        }
    }
}
