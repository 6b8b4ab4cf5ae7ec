package dev.outbox.spi;

import dev.outbox.OutboxRecord;

import java.util.List;

/**
 * What one {@link CursorHarvest#read} returned: the rows, and where the read stood among the writers' transactions, so
 * that the harvest can tell an id that may still commit from one that never will.
 *
 * <p>Transactions are ordered by an <em>ordinal</em> the store chooses (on Postgres the transaction id, elsewhere
 * a time): {@code gapToken} and {@code horizon} are two ordinals of the read's snapshot.
 *
 * @param rows     the rows read, readable or not, in ascending id order ({@link MarkResult#records()} and
 *                 {@link MarkResult#rejected()}, which the dispatcher parks)
 * @param gapToken every id at or below the highest id returned that this read did not see (its writer had not
 *                 committed, or rolled back) was taken by a transaction whose ordinal is below {@code gapToken}
 * @param horizon  every transaction whose ordinal is below {@code horizon} had ended when the read took its
 *                 snapshot: its committed rows are visible to the read. An id that a read with token {@code T}
 *                 did not see and that a later read with {@code horizon >= T} did not see either will never
 *                 appear.
 */
public record ReadResult(MarkResult rows, long gapToken, long horizon) {

    /**
     * Checks the components.
     *
     * @param rows     the rows read; not null
     * @param gapToken the read's gap token
     * @param horizon  the read's horizon
     * @throws IllegalArgumentException if {@code rows} is null
     */
    public ReadResult {
        if (rows == null) {
            throw new IllegalArgumentException("rows must not be null");
        }
    }

    /**
     * A result of readable records only.
     *
     * @param records  the records read, in ascending id order
     * @param gapToken the read's gap token
     * @param horizon  the read's horizon
     * @return the result, with no rejected row
     */
    public static ReadResult of(List<OutboxRecord> records, long gapToken, long horizon) {
        return new ReadResult(MarkResult.of(records), gapToken, horizon);
    }

    /**
     * Number of rows read, readable or not.
     *
     * @return the count, 0 or more
     */
    public int size() {
        return rows.size();
    }

    /**
     * The highest id read, or 0 when nothing was read.
     *
     * @return the highest id among the readable and the rejected rows, or 0
     */

    public long maxId() {
        long max = 0;
        List<OutboxRecord> records = rows.records();
        if (!records.isEmpty()) {
            max = records.get(records.size() - 1).id();
        }
        for (MarkResult.Rejected r : rows.rejected()) {
            max = Math.max(max, r.id());
        }
        return max;
    }
}
