package dev.outbox.spi;

import java.util.Collection;
import java.util.UUID;

/**
 * A {@link Store} capability: the mark harvest ({@code DispatcherConfig.Harvest.MARK}), which stamps the leader id on
 * the oldest rows not marked with it.
 */
public interface MarkHarvest {

    /**
     * Marks the oldest rows for {@code leaderId} and returns them. Atomically: takes up to {@code limit} rows
     * with the lowest ids among the committed, unparked rows whose leader id is null or differs from
     * {@code leaderId}, sets their leader id to {@code leaderId}, and returns them (with the new leader id) in
     * ascending id order.
     *
     * <ul>
     *   <li>Never returns a row that is not committed, and never blocks application transactions that insert
     *       rows; it may skip rows locked by a concurrent writer only if they are not yet committed.</li>
     *   <li>Two marks with different leader ids never both return the same row unless the second ran after the
     *       first committed (the second then "steals" it: that is how a new leader salvages rows).</li>
     *   <li>A row that cannot be read as a valid message is marked like any other but returned in
     *       {@link MarkResult#rejected()} so that the dispatcher parks it.</li>
     * </ul>
     *
     * @param leaderId the marking leader's current id, not null
     * @param limit    the most rows to mark, at least 1
     * @return the rows marked and the rows rejected
     */
    MarkResult mark(UUID leaderId, int limit);

    /**
     * Records a failed delivery of the given rows and gives them up: increments their attempt count and, for each
     * row still marked with {@code leaderId}, clears the leader id so that the next mark takes it again. A row marked
     * by another leader meanwhile keeps that leader's mark. Ids that no longer exist are ignored. The dispatcher
     * does not call it (it retries a failed delivery from memory, see {@link Store#retryLater}); it is for tools that
     * hand marked rows back to the next mark.
     *
     * @param leaderId the leader whose marks are cleared, not null
     * @param ids      the rows' ids
     */
    void reset(UUID leaderId, Collection<Long> ids);
}
