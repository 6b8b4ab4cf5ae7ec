package dev.outbox.store.sql;

import java.util.List;
import java.util.Objects;

/**
 * The statements {@link SqlStore} runs the same way for every database, as one dialect writes them for one table
 * (or one shard's view of it), the names filled in: the batch writes, storage fencing, the parked area and the
 * gauges. Fenced variants are written out in full, never derived from the unfenced ones. What truly differs between
 * databases (the mark, the cursor read, the replay) keeps its statements with the dialect. Immutable and
 * thread-safe.
 *
 * @param prologue            the first statement of every transaction (session settings, the isolation level), or
 *                            null for none
 * @param purge               deletes rows by id ({@link SqlWrite.Kind#IDS})
 * @param reset               counts a failure and clears the leader's mark ({@link SqlWrite.Kind#LEADER_THEN_IDS})
 * @param retryLater          counts a failure and sets the next attempt's time ({@link SqlWrite.Kind#PAIRS} of
 *                            {@link SqlColumns#instantValue})
 * @param park                moves rows to the parked table with a reason each ({@link SqlWrite.Kind#PAIRS} of
 *                            text)
 * @param discard             deletes parked rows by id; never fenced
 * @param takeEpoch           increments the leader row's epoch, creating the row if missing; the last statement
 *                            returns the new epoch
 * @param fenceLock           reads the leader row's epoch with a lock held until the transaction ends: what fences a
 *                            write without a fenced statement, and the mark of such a dialect; null if every write
 *                            has a fenced statement
 * @param parked              the summaries of parked rows (id, topic, key, attempts, reason, parked time,
 *                            message_id) by ascending id; parameter: the limit
 * @param parkedFiltered      the same, filtered: after an id, then each of topic, key, reason fragment, message id,
 *                            parked from and parked before twice (null for no condition), then the limit
 * @param parkedFilteredCount the count of the same filter, without the limit
 * @param parkedMessage       one parked row in full: the summary's columns, then the creation time, the value, the
 *                            headers' column(s) and message_id; parameter: the id
 * @param parkedKeys          the distinct keys of the parked table
 * @param backlog             the outbox's rows counted up to {@link SqlStore#EXACT_BACKLOG_LIMIT} + 1, and an
 *                            estimate of them: two columns of one row
 * @param parkedCount         the parked table's rows
 * @param oldest              the creation time of the row at the head of the outbox and the database's clock now, as
 *                            two columns of one row (the head's age measured by the database), or no row
 * @param shardExpression     the generation expression of the outbox's {@code shard} column, or no row
 */
public record SqlStatements(String prologue, SqlWrite purge, SqlWrite reset, SqlWrite retryLater, SqlWrite park,
                            SqlWrite discard, List<String> takeEpoch, String fenceLock, String parked,
                            String parkedFiltered, String parkedFilteredCount, String parkedMessage, String parkedKeys,
                            String backlog, String parkedCount, String oldest, String shardExpression) {

    /**
     * Checks and copies the components; see the record's description for what each holds.
     *
     * @param prologue            the transactions' first statement, or null
     * @param purge               the purge; not null
     * @param reset               the reset; not null
     * @param retryLater          the failure record with a next attempt; not null
     * @param park                the park; not null
     * @param discard             the discard of parked rows; not null
     * @param takeEpoch           the epoch's increment; not null, at least one statement
     * @param fenceLock           the locking read of the epoch, or null if purge, reset, retryLater and park each have
     *                            a fenced statement
     * @param parked              the parked summaries; not null
     * @param parkedFiltered      the filtered parked summaries; not null
     * @param parkedFilteredCount their count; not null
     * @param parkedMessage       one parked row in full; not null
     * @param parkedKeys          the parked keys; not null
     * @param backlog             the backlog's count and estimate; not null
     * @param parkedCount         the parked count; not null
     * @param oldest              the head's creation time and the database's clock; not null
     * @param shardExpression     the shard column's expression; not null
     * @throws NullPointerException     if a component other than {@code prologue} and {@code fenceLock} is null
     * @throws IllegalArgumentException if {@code takeEpoch} is empty, or a write has neither a fenced statement nor a
     *                                  {@code fenceLock} to fence it
     */
    public SqlStatements {

        Objects.requireNonNull(purge, "purge must not be null");
        Objects.requireNonNull(reset, "reset must not be null");
        Objects.requireNonNull(retryLater, "retryLater must not be null");
        Objects.requireNonNull(park, "park must not be null");
        Objects.requireNonNull(discard, "discard must not be null");
        takeEpoch = List.copyOf(takeEpoch);
        if (takeEpoch.isEmpty()) {
            throw new IllegalArgumentException("takeEpoch needs at least one statement");
        }
        for (SqlWrite write : List.of(purge, reset, retryLater, park)) {
            if (write.fenced() == null && fenceLock == null) {
                throw new IllegalArgumentException("a write without a fenced statement needs a fenceLock: "
                        + write.steps().get(0).sql());
            }
        }
        Objects.requireNonNull(parked, "parked must not be null");
        Objects.requireNonNull(parkedFiltered, "parkedFiltered must not be null");
        Objects.requireNonNull(parkedFilteredCount, "parkedFilteredCount must not be null");
        Objects.requireNonNull(parkedMessage, "parkedMessage must not be null");
        Objects.requireNonNull(parkedKeys, "parkedKeys must not be null");
        Objects.requireNonNull(backlog, "backlog must not be null");
        Objects.requireNonNull(parkedCount, "parkedCount must not be null");
        Objects.requireNonNull(oldest, "oldest must not be null");
        Objects.requireNonNull(shardExpression, "shardExpression must not be null");
    }
}
