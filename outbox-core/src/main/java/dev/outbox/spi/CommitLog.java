package dev.outbox.spi;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A {@link Store} capability: the outbox lives in a log of committed messages (a Postgres replication slot fed by
 * {@code pg_logical_emit_message}) rather than in a table, and the dispatcher harvests it by streaming. The store
 * provides what only it can — open a {@link CommitStream}, decode a message, keep the ledger, park a message — and
 * the dispatcher does the rest itself: it gives each streamed message an id, keeps what it received and has not
 * finished in memory, confirms the stream as far as everything before is finished, and skips on a later stream what
 * the ledger names. A store that offers this capability offers no {@link CursorHarvest} and no {@link MarkHarvest}:
 * its messages are not rows, so its {@link Store#purge}, {@link Store#retryLater} and {@link Store#park} find none.
 *
 * <h2>The ledger</h2>
 * The stream's one confirmed position cannot say that a message above it was finished (acknowledged while an
 * earlier one, of another key, was not). Without a record of those, a new leader would deliver such a message
 * again, after later messages of its own key that the old leader had delivered too. The ledger is that record:
 * positions of messages finished above the confirmed position, kept durably next to the stream's source (the
 * Postgres store keeps one row per append in {@code <table>_wal_ledger}).
 *
 * <p>Proven by {@code dev.outbox.testkit.StreamStoreContract}. Thread-safety: {@link #open} and {@link #loadLedger}
 * are called by the harvesting thread; {@link #appendLedger} and {@link #park} by the thread that finishes messages,
 * one call at a time; {@link #decode} by the harvesting thread.
 */
public interface CommitLog {

    /**
     * Opens a stream of the committed messages, starting after the position last confirmed. Called by the first
     * read of a leadership and after a stream failed; may block for a while (a slot a deposed leader still holds is
     * taken over once that leader is known to be gone).
     *
     * @return the open stream
     * @throws StoreException if the stream could not be opened
     */
    CommitStream open();

    /**
     * Turns one streamed message into a row: a {@link MarkedRow.Readable} record with the given id (its creation
     * time is the commit time, its attempts zero), or a {@link MarkResult.Rejected} row with a reason when the
     * message cannot be read, which the dispatcher then parks. Must not throw.
     *
     * @param id      the id the dispatcher gave the message
     * @param message the message as streamed
     * @return the row: readable or rejected; never null
     */
    MarkedRow decode(long id, CommitStream.StreamMessage message);

    /**
     * How long a read waits for the first new message when none is pending: the stream pushes, so a read returns as
     * soon as a message arrives. A fraction of a second, so that the harvest notices leadership changes quickly;
     * zero for a read that never waits (a deterministic test).
     *
     * @return the wait; not negative
     */
    Duration readWait();

    /**
     * Adds the given finished messages (message position → its transaction's end position) to the ledger, durably,
     * and may forget every entry that ends at or before the position the source itself holds as confirmed (the
     * slot's, not what the dispatcher confirmed: a confirmation not received yet is lost with its stream); returns
     * that position, at or below which the dispatcher forgets its entries too. The cost should be that of the
     * entries added, not of everything kept: a busy harvest keeps tens of thousands of entries while the source's
     * position trails its acknowledgements. Called before the purge that finished the messages returns (so before
     * their keys move on).
     *
     * @param finished message position → its transaction's end position, for the messages just finished
     * @return the source's confirmed position; 0 if unknown
     * @throws StoreException if the entries could not be kept (the dispatcher adds them again with its next call)
     */
    long appendLedger(Map<Long, Long> finished);

    /**
     * What the ledger keeps, message position → its transaction's end position; empty if nothing. May include
     * entries at or below the source's confirmed position (a stream never delivers those again). Read once per
     * leadership, before its first stream is opened.
     *
     * @return the kept entries; never null
     */
    Map<Long, Long> loadLedger();

    /**
     * Writes messages received from the stream to the parked area, each with its reason, where an operator lists
     * and replays them through {@link ParkedRecords}. Parking a message again (its confirmation was lost and a new
     * stream delivered it again) changes nothing. Atomic: all or none. The dispatcher then counts them finished.
     *
     * @param messages the messages to park; not empty
     * @throws StoreException if they could not be parked
     */
    void park(List<Parked> messages);

    /**
     * A streamed message to park.
     *
     * @param message the message as streamed
     * @param row     what {@link #decode} made of it, with the attempts the dispatcher recorded
     * @param reason  why it is parked, for a human to read
     */
    record Parked(CommitStream.StreamMessage message, MarkedRow row, String reason) {
    }
}
