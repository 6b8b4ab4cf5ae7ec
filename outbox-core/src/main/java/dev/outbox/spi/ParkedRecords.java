package dev.outbox.spi;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;

import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * The operator's view of a store's parked area: filtered, paged listing, one parked row in full, and discarding.
 * (Replaying is {@link Store#replay}.) Implemented by the SQL stores next to {@link Store}; proven by
 * {@code dev.outbox.testkit.ParkedRecordsContract} against a real server.
 *
 * <p>Same contract as {@link Store}: thread-safe, every call bounded in time, changes atomic and committed on
 * return, failures reported as {@link StoreException}.
 */
public interface ParkedRecords {

    /**
     * The parked rows matching {@code query}, by ascending id: those with an id above {@link ParkedQuery#afterId()}
     * (keyset paging: pass the last id of one page to get the next), at most {@link ParkedQuery#limit()}.
     */
    List<ParkedRecord> parked(ParkedQuery query);

    /** How many parked rows match {@code query}'s filters (its paging, {@code afterId} and {@code limit}, ignored). */
    long parkedCount(ParkedQuery query);

    /** The parked row with {@code id}, with its payload and headers as stored; empty if there is none. */
    Optional<ParkedMessage> parkedMessage(long id);

    /**
     * Deletes the parked rows with the given ids for good. Ids that are not parked are ignored; an empty collection
     * does nothing.
     *
     * @return how many rows were deleted
     */
    int discard(Collection<Long> ids);
}
