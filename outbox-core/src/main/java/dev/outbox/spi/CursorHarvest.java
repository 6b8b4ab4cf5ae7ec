package dev.outbox.spi;

import java.util.List;

/**
 * A {@link Store} capability: the cursor harvest ({@code DispatcherConfig.Harvest.CURSOR}, the default), which reads
 * committed rows above a cursor the dispatcher keeps in memory and changes nothing on the way; also the harvest of a
 * store fed by a stream (a replication slot) whose read {@linkplain #readWaits() waits} for rows.
 */
public interface CursorHarvest {

    /**
     * Reads committed rows, changing nothing: the rows with an id above {@code after} or in one of the
     * {@code recheck} ranges, with the lowest ids first, at most {@code limit}, in ascending id order, whoever marked
     * them and whatever their next attempt time. A read never waits for, or blocks, a writer.
     *
     * <p>The result also tells how far the read could see ({@link ReadResult#gapToken()},
     * {@link ReadResult#horizon()}): ids are taken when a row is written, rows become visible when their
     * transaction commits, so a row can appear below an id the harvest has already read. The harvest remembers
     * the ids it passed without seeing (gaps) and rechecks them until a later read's horizon says they can no
     * longer commit.
     *
     * <ul>
     *   <li>Never returns a row that is not committed or that was parked.</li>
     *   <li>A row that cannot be read as a valid message is returned in {@link MarkResult#rejected()}, so that the
     *       dispatcher parks it.</li>
     *   <li>Any committed row whose id is below the highest id returned, and that matched the conditions, is
     *       returned too (the read is one snapshot).</li>
     * </ul>
     *
     * @param after   return rows with ids above this (0 for the head of the table)
     * @param recheck ranges of ids below {@code after} to return as well, if they hold committed rows; may be empty
     * @param limit   the most rows to return, at least 1
     * @return the rows read and how far the read could see
     */
    ReadResult read(long after, List<IdRange> recheck, int limit);

    /**
     * Whether {@link #read} waits for rows to arrive when none is ready (a store fed by a stream that pushes, such
     * as a replication slot) instead of returning at once. The dispatcher then reads again straight after an empty
     * read, instead of backing off up to {@code pollInterval}. A waiting read returns as soon as rows arrive and
     * waits no longer than a fraction of a second, so that the harvest still notices leadership changes quickly.
     *
     * @return whether a read waits for rows; false by default
     */
    default boolean readWaits() {
        return false;
    }

    /**
     * Cuts short a {@link #read} that is {@linkplain #readWaits() waiting} for rows: it returns at once with what it
     * has. The dispatcher calls it, from another thread, when it has records to send that the wait would hold back
     * (an acknowledgement let a key's next record go); a read that is not waiting may return early once. A store
     * whose read never waits ignores it, as does the default.
     */
    default void wakeRead() {
    }

    /**
     * The dispatcher stopped harvesting on this instance (it is no longer leader, its leadership changed epoch, or
     * it closes): release at once what the harvest holds in the database (a replication stream, a slot), so that
     * the next leader can take it. Records read and not yet purged are forgotten: a later read finds them again.
     * Called by the harvesting thread, never concurrently with {@link #read}. The default does nothing.
     */
    default void harvestStopped() {
    }
}
