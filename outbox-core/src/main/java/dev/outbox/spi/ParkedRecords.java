package dev.outbox.spi;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;

import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * A {@link Store} capability: the operator's view of the parked area — the rows {@linkplain Store#park parked} —
 * listed, counted, read in full, replayed and discarded. Implemented by the SQL stores; proven by
 * {@code dev.outbox.testkit.ParkedRecordsContract} against a real server.
 *
 * <p>Same contract as {@link Store}: thread-safe, every call bounded in time, changes atomic and committed on
 * return, failures reported as {@link StoreException}.
 */
public interface ParkedRecords {

    /**
     * The oldest parked rows, by ascending id: {@code parked(ParkedQuery.first(limit))}.
     *
     * @param limit the most rows to return, at least 1
     * @return the rows, at most {@code limit}
     */
    default List<ParkedRecord> parked(int limit) {
        return parked(ParkedQuery.first(limit));
    }

    /**
     * The parked rows matching {@code query}, by ascending id: those with an id above {@link ParkedQuery#afterId()}
     * (keyset paging: pass the last id of one page to get the next), at most {@link ParkedQuery#limit()}.
     *
     * @param query the filters and the page
     * @return the rows of the page
     */
    List<ParkedRecord> parked(ParkedQuery query);

    /**
     * How many parked rows match {@code query}'s filters (its paging, {@code afterId} and {@code limit}, ignored).
     *
     * @param query the filters
     * @return the number of matching rows
     */
    long parkedCount(ParkedQuery query);

    /**
     * The parked row with {@code id}, with its payload and headers as stored.
     *
     * @param id the parked row's id
     * @return the row, or empty if there is none
     */
    Optional<ParkedMessage> parkedMessage(long id);

    /**
     * Puts parked rows back into the outbox as new rows (new ids, at the tail, attempts zero) and removes them
     * from the parked area, atomically. Rows that cannot be read as messages are replayed as they are and will
     * be parked again when next harvested.
     *
     * <p>Each replayed row gets the header {@value dev.outbox.KeySequence#REPLAYED} appended to its headers, whose
     * value is the id the row had when it was parked, in ASCII decimal ({@link dev.outbox.KeySequence#encode}): a
     * consumer that checks the per-key sequence then reports the replayed record's old sequence number as the
     * deliberate reorder it is. The rows moved behind the replayed ones (below) are not marked: they keep their
     * headers as they were.
     *
     * <p>A store with {@link ParkedKeys} also moves, in the same transaction, every outbox row of a replayed row's
     * key whose id is above that parked row's id behind the replayed rows (new ids, in their old order), so that a
     * key's order survives the replay: the replayed rows of a key come first, in parked id order, then the rows that
     * waited behind them. Those are the rows a dispatcher holding the key ({@code DispatcherConfig.AfterPark.HOLD_KEY})
     * kept back; with {@code MOVE_ON}, a moved row that was in flight is delivered once more (after the replayed
     * one, so that the key's latest value stays its latest).
     *
     * @param ids the parked rows' ids
     * @return how many parked rows were replayed
     */
    int replay(Collection<Long> ids);

    /**
     * Deletes the parked rows with the given ids for good. Ids that are not parked are ignored; an empty collection
     * does nothing.
     *
     * @param ids the parked rows' ids
     * @return how many rows were deleted
     */
    int discard(Collection<Long> ids);
}
