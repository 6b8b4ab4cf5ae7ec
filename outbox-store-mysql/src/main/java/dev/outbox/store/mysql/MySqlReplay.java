package dev.outbox.store.mysql;

import dev.outbox.MessageIds;
import dev.outbox.store.sql.SqlTransactions;
import org.jdbi.v3.core.Handle;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The replay of parked rows on MySQL and MariaDB, in one transaction: the parked rows are locked, given a message id
 * if they have none (rows older than the column), inserted into the outbox in parked id order and deleted from the
 * parked table; then, for each replayed key, the outbox rows of the key above its first replayed row's parked id,
 * other than the replayed ones, are locked ({@code FOR UPDATE} over the primary key: this waits for writer
 * transactions that inserted rows there and have not committed, bounded by the statement timeout), copied to the
 * tail in id order and deleted. The replayed rows took their ids before that lock, so a writer that commits later
 * takes a higher id. Immutable and thread-safe.
 */
final class MySqlReplay {
    private final SqlTransactions tx;
    private final MySqlStatements sql;
    private final String table;

    MySqlReplay(SqlTransactions tx, MySqlStatements sql, String table) {
        this.tx = tx;
        this.sql = sql;
        this.table = table;
    }

    /** Replays the parked rows with the given ids (ascending, not empty); returns how many there were. */
    int replay(List<Long> sorted) {
        return tx.inTransaction("replaying " + sorted.size() + " parked rows into " + table,
                MySqlStatements.READ_COMMITTED, handle -> {
                    int count = 0;
                    Map<String, Long> firstParkedId = new TreeMap<>();
                    Map<String, List<UUID>> replayedIds = new TreeMap<>();
                    for (List<Long> chunk : InLists.chunks(sorted, MySqlStore.MAX_IDS_PER_STATEMENT)) {
                        List<Long> present = InLists.bind(tx.timed(handle.createQuery(
                                InLists.in(sql.lockParked(), chunk.size()))), 0, chunk).mapTo(Long.class).list();
                        if (present.isEmpty()) {
                            continue;
                        }
                        Map<Long, UUID> unnamed = new TreeMap<>();
                        InLists.bind(tx.timed(handle.createQuery(InLists.in(sql.replayedKeys(), present.size()))), 0,
                                present).map((rs, ctx) -> {
                                    long id = rs.getLong(1);
                                    UUID messageId = RowReader.uuid(rs.getBytes(3));
                                    if (messageId == null) {
                                        messageId = MessageIds.next();
                                        unnamed.put(id, messageId);
                                    }
                                    firstParkedId.merge(rs.getString(2), id, Math::min);
                                    replayedIds.computeIfAbsent(rs.getString(2), k -> new ArrayList<>()).add(messageId);
                                    return id;
                                }).list();
                        for (Map.Entry<Long, UUID> e : unnamed.entrySet()) {
                            tx.timed(handle.createUpdate(sql.nameParked()))
                                    .bind(0, RowReader.bytes(e.getValue())).bind(1, e.getKey().longValue()).execute();
                        }
                        InLists.bind(tx.timed(handle.createUpdate(InLists.in(sql.replayInsert(), present.size()))), 0,
                                present).execute();
                        InLists.bind(tx.timed(handle.createUpdate(InLists.in(sql.deleteParked(), present.size()))), 0,
                                present).execute();
                        count += present.size();
                    }
                    moveBehindReplayed(handle, firstParkedId, replayedIds);
                    return count;
                });
    }

    /** The second half of {@link #replay}: each replayed key's later rows move behind its replayed rows. */
    private void moveBehindReplayed(Handle handle, Map<String, Long> firstParkedId,
                                    Map<String, List<UUID>> replayedIds) {
        List<Long> behind = new ArrayList<>();
        for (Map.Entry<String, Long> e : firstParkedId.entrySet()) {
            Set<UUID> replayedOfKey = new HashSet<>(replayedIds.get(e.getKey()));
            tx.timed(handle.createQuery(sql.behind())).bind(0, e.getValue().longValue()).bind(1, e.getKey())
                    .map((rs, ctx) -> {
                        if (!replayedOfKey.contains(RowReader.uuid(rs.getBytes(2)))) {
                            behind.add(rs.getLong(1));
                        }
                        return null;
                    }).list();
        }
        behind.sort(Comparator.naturalOrder());
        for (List<Long> chunk : InLists.chunks(behind, MySqlStore.MAX_IDS_PER_STATEMENT)) {
            InLists.bind(tx.timed(handle.createUpdate(InLists.in(sql.moveBehind(), chunk.size()))), 0, chunk)
                    .execute();
            InLists.bind(tx.timed(handle.createUpdate(InLists.in(sql.deleteOutbox(), chunk.size()))), 0, chunk)
                    .execute();
        }
    }
}
