package dev.outbox.internal;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.CommitLog;
import dev.outbox.spi.CommitStream;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.StoreException;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The engine's harvest of a store that offers a {@link CommitLog} (a log of committed messages, such as a Postgres
 * replication slot) instead of a table: {@link StreamStore} turns the engine's reads, purges, failure records, parks
 * and stops into calls here. It keeps the messages the leader has received and not yet finished in memory, gives
 * each an id, and confirms to the stream the position below which every message is finished, so that the database
 * may forget them and a later stream starts after them.
 *
 * <h2>How the engine sees it</h2>
 * Ids are assigned in stream order (commit order), one per message, and never reused by this instance; a
 * {@link #read} returns the pending messages above the cursor in id order, as a table read would. There are no
 * gaps: a message is in the stream only once its transaction committed, so every read reports a horizon that
 * closes any gap at once. A message is finished when it is acknowledged ({@link #finished}, from the engine's
 * purge) or parked (the store writes it to its parked area, then the view calls {@link #finished}).
 *
 * <h2>Confirmation</h2>
 * A transaction is finished when all its messages are; the stream is confirmed up to the end of the last
 * transaction that is finished together with every transaction before it. When nothing is pending, the stream's
 * {@linkplain CommitStream#readPosition() read position} is confirmed, so that an idle outbox in a busy database
 * does not hold the log back. A message finished while an earlier one is not (another key's) lies above that
 * position: it is kept in the store's ledger ({@link CommitLog#appendLedger}, before the call that finished it returns), and a later stream, of
 * this leader or the next, skips it. So a message is delivered again only if it was not finished — at least once,
 * and never after a later message of its key — as long as the ledger was saved.
 *
 * <h2>Leadership</h2>
 * The first {@link #read} opens a stream; {@link #stop()} closes it and forgets every pending message, and the
 * next read opens a new one, which starts after the confirmed position. A failed stream is closed and the read
 * that saw it fails; the next read opens a new one, and this harvest keeps what it had: the pending messages keep
 * their ids (the engine still holds them, in flight or queued), the messages the new stream delivers again are
 * recognised by their positions and skipped (pending or finished already), and the new stream is confirmed at once
 * as far as the old one was (a confirmation the failed stream had not sent yet is not lost). Redelivering them
 * under new ids would let a key's later record, queued under its old id, go before an earlier one delivered
 * again.
 *
 * <p>What a failed delivery records ({@link #retryLater}) lives in memory only: a new stream delivers the message
 * with zero attempts.
 *
 * <p>Thread-safe: {@link #read} is called by one thread at a time (the dispatcher's harvest thread); the other
 * methods may be called from any thread, concurrently with a read.
 */
final class StreamHarvest {

    /**
     * A message received and not finished yet.
     *
     * @param id      the id this harvest gave it
     * @param message the message as streamed
     * @param row     what the decoder made of it, with the attempts recorded so far
     */
    record Pending(long id, CommitStream.StreamMessage message, MarkedRow row) {
    }

    private final CommitLog log;
    private final Duration readWait;
    /** Serialises ledger appends: a finished call returns only once what it finished is in the ledger. */
    private final Object saving = new Object();

    /** The open stream, or null; replaced only by the reading thread, cleared by stop() from any thread. */
    private CommitStream stream;
    /** The pending messages by id, in stream order. Guarded by this. */
    private final PendingWindow pending = new PendingWindow();
    /** The last id given. Guarded by this. */
    private long lastId;
    /** The distinct transaction end positions received and not confirmed yet, ascending. Guarded by this. */
    private final TreeSet<Long> ends = new TreeSet<>();
    /**
     * The last message received since the last {@link #stop()}, across streams, as its transaction's end position
     * and its own position (0 for none): a stream opened after a failure delivers again what lies at or before it,
     * which this harvest has (pending) or finished. Positions ascend within a transaction, not across transactions
     * (a transaction's messages take theirs when written, its place in the stream when it commits). Guarded by this.
     */
    private long receivedEnd;
    private long receivedPosition;
    /**
     * The messages finished above the confirmed position, message position → transaction end position, including
     * those a previous leader finished (from the ledger): a message streamed again that is named here is
     * skipped. Guarded by this.
     */
    private final HashMap<Long, Long> done = new HashMap<>();
    /** The positions in {@link #done} by their transaction's end position, to forget them in order. Guarded by this. */
    private final TreeMap<Long, List<Long>> doneByEnd = new TreeMap<>();
    /**
     * The highest transaction end position ever put in {@link #done}: a message of a later transaction cannot be
     * named there, which spares the lookup for nearly every message a stream delivers the first time. Guarded by this.
     */
    private long doneMaxEnd = Long.MIN_VALUE;
    /** The entries of {@link #done} not appended to the ledger yet. Guarded by this. */
    private final Map<Long, Long> unsaved = new HashMap<>();
    /** Whether {@link #done} was loaded from the ledger since the last stop. Guarded by this. */
    private boolean loaded;
    /**
     * The highest position confirmed since the last {@link #stop()}, across streams: a stream opened after a failure
     * is confirmed this far at once. Guarded by this.
     */
    private long confirmed;

    /**
     * @param log the store's side: opens streams, decodes messages, keeps the ledger
     * @throws NullPointerException     if {@code log} is null
     * @throws IllegalArgumentException if its read wait is negative
     */
    StreamHarvest(CommitLog log) {
        this.log = Objects.requireNonNull(log, "log");
        this.readWait = Objects.requireNonNull(log.readWait(), "readWait");
        if (readWait.isNegative()) {
            throw new IllegalArgumentException("readWait must not be negative, was " + readWait);
        }
    }

    /**
     * The read of a streamed outbox: the pending messages with ids above {@code after} or in the
     * {@code recheck} ranges, at most {@code limit}, in id order, after taking what the stream has (waiting up to
     * the read wait when nothing is pending above {@code after}). Opens a stream if none is open.
     *
     * @param after   the cursor: messages with greater ids are returned
     * @param recheck ranges at or below {@code after} to return again; not null
     * @param limit   the most messages to return, at least 1
     * @return the messages read, in id order
     * @throws IllegalArgumentException if {@code limit} is below 1
     * @throws StoreException if the stream could not be opened or failed (it is closed; the next read opens another)
     */
    ReadResult read(long after, List<IdRange> recheck, int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1, was " + limit);
        }
        Objects.requireNonNull(recheck, "recheck");
        CommitStream s;
        int above;
        synchronized (this) {
            s = stream;
            above = pending.countAbove(after, limit);
        }
        if (s == null) {
            boolean fresh;
            synchronized (this) {
                fresh = !loaded;
            }
            Map<Long, Long> kept = fresh ? log.loadLedger() : Map.of();
            s = log.open();
            long again;
            synchronized (this) {
                if (fresh) {
                    kept.forEach(this::remember); // what a previous leader finished above the confirmed position
                    loaded = true;
                }
                stream = s;
                again = confirmed;
            }
            if (again > 0) {
                s.confirm(again); // what the failed stream may not have sent
            }
        }
        List<CommitStream.StreamMessage> got = List.of();
        if (above < limit) {
            try {
                got = s.poll(limit - above, above == 0 ? readWait : Duration.ZERO);
            } catch (RuntimeException e) {
                synchronized (this) {
                    if (stream != s) {
                        return empty(); // stopped meanwhile: that closed the stream
                    }
                    stream = null; // the pending messages stay: the engine holds them, the next stream skips them
                }
                s.close();
                throw e instanceof StoreException se ? se
                        : new StoreException("the commit stream failed: " + e.getMessage(), e, true);
            }
        }
        List<MarkedRow> rows;
        long confirm;
        synchronized (this) {
            if (stream != s) {
                return empty(); // stopped meanwhile: what was polled belongs to a closed stream
            }
            for (CommitStream.StreamMessage m : got) {
                if (m.endPosition() < receivedEnd
                        || (m.endPosition() == receivedEnd && m.position() <= receivedPosition)) {
                    continue; // delivered again by a stream opened after a failure: pending or finished already
                }
                receivedEnd = m.endPosition();
                receivedPosition = m.position();
                ends.add(m.endPosition());
                if (m.endPosition() <= doneMaxEnd && done.containsKey(m.position())) {
                    continue; // finished by a previous leader (the ledger): counts as finished, not sent again
                }
                long id = ++lastId;
                pending.append(new Pending(id, m, log.decode(id, m)));
            }
            confirm = pending.isEmpty() ? confirmable(s) : -1; // idle: let the log go
            List<MarkedRow> tail = new ArrayList<>(Math.min(limit, pending.size()));
            pending.forEach(after + 1, Long.MAX_VALUE, limit, p -> tail.add(p.row()));
            rows = tail;
            if (!recheck.isEmpty()) { // rows below the cursor too: merge them in id order
                TreeMap<Long, MarkedRow> merged = new TreeMap<>();
                for (MarkedRow row : tail) {
                    merged.put(row.id(), row);
                }
                for (IdRange range : recheck) {
                    pending.forEach(range.from(), Math.min(range.to(), after), Integer.MAX_VALUE,
                            p -> merged.put(p.id(), p.row()));
                }
                rows = new ArrayList<>(merged.values());
            }
        }
        if (confirm >= 0) {
            s.confirm(confirm);
        }
        return new ReadResult(MarkedRow.result(rows), 0, Long.MAX_VALUE);
    }

    /**
     * Cuts short a {@link #read} waiting on the stream for a message
     * (see {@link CommitStream#wakeup}). Any thread.
     */
    void wakeRead() {
        CommitStream s;
        synchronized (this) {
            s = stream;
        }
        if (s != null) {
            s.wakeup();
        }
    }

    private static ReadResult empty() {
        return new ReadResult(MarkResult.of(List.of()), 0, Long.MAX_VALUE);
    }

    /**
     * The given messages are finished (acknowledged, or parked by the store): forgets them and confirms the
     * stream as far as every earlier message is finished too. Unknown ids (of a stream closed since) are ignored.
     *
     * @param ids the ids this harvest gave the finished messages
     * @throws StoreException if the ledger cannot record them (they are recorded again with the next call)
     */
    void finished(Collection<Long> ids) {
        CommitStream s;
        long to;
        synchronized (this) {
            for (Long id : ids) {
                Pending p = pending.remove(id);
                if (p != null) {
                    remember(p.message().position(), p.message().endPosition());
                    unsaved.put(p.message().position(), p.message().endPosition());
                }
            }
            s = stream;
            to = s == null ? -1 : confirmable(s);
        }
        appendToLedger(); // before the keys move on, and before the stream is confirmed past them
        if (to >= 0) {
            s.confirm(to);
        }
    }

    /** Caller holds this. Names a finished message, so that a stream delivering it again skips it. */
    private void remember(long position, long end) {
        doneMaxEnd = Math.max(doneMaxEnd, end);
        if (done.put(position, end) == null) {
            doneByEnd.computeIfAbsent(end, e -> new ArrayList<>()).add(position);
        }
    }

    /**
     * Appends what was finished and not appended yet to the ledger (one call at a time; a failed append puts its
     * entries back for the next), then forgets every entry the source's confirmed position vouches for.
     */
    private void appendToLedger() {
        synchronized (saving) {
            Map<Long, Long> added;
            synchronized (this) {
                if (unsaved.isEmpty()) {
                    return;
                }
                added = new HashMap<>(unsaved);
                unsaved.clear();
            }
            long atSource;
            try {
                atSource = log.appendLedger(added);
            } catch (RuntimeException e) {
                synchronized (this) {
                    added.forEach(unsaved::putIfAbsent);
                }
                throw e;
            }
            synchronized (this) {
                Map<Long, List<Long>> vouched = doneByEnd.headMap(atSource, true);
                for (List<Long> positions : vouched.values()) {
                    positions.forEach(done::remove);
                }
                vouched.clear(); // the source's position vouches for them now
            }
        }
    }

    /**
     * Caller holds this. The position to confirm to {@code s} now, or -1 if it did not move: the end of the last
     * transaction seen before the first pending message's, whose messages and all earlier ones are therefore
     * finished; with nothing pending, where the stream has read to, or the end of the last transaction before the
     * latest one seen if that is further. The latest transaction seen is not known to be whole (a poll may return
     * the first part of a transaction, the rest with the next poll): only the stream's read position vouches for it.
     */
    private long confirmable(CommitStream s) {
        long to;
        if (pending.isEmpty()) {
            Long whole = ends.isEmpty() ? null : ends.lower(ends.last());
            to = Math.max(whole == null ? 0 : whole, s.readPosition());
        } else {
            Long before = ends.lower(pending.first().message().endPosition());
            to = before == null ? 0 : before;
        }
        if (to <= confirmed) {
            return -1;
        }
        confirmed = to;
        ends.headSet(to, true).clear();
        return to;
    }

    /**
     * Records a failed delivery of each given message, in memory (the engine's failure record): a later read returns
     * the record with one more attempt and its next attempt time. Unknown ids are ignored.
     *
     * @param nextAttempts the time of the next attempt by id
     */
    synchronized void retryLater(Map<Long, Instant> nextAttempts) {
        for (Map.Entry<Long, Instant> e : nextAttempts.entrySet()) {
            Objects.requireNonNull(e.getKey(), "id");
            Objects.requireNonNull(e.getValue(), "next attempt time");
            Pending p = pending.get(e.getKey());
            if (p != null && p.row() instanceof MarkedRow.Readable readable) {
                OutboxRecord failed = readable.record().failedOnce(e.getValue());
                pending.replace(new Pending(p.id(), p.message(), new MarkedRow.Readable(failed)));
            }
        }
    }

    /**
     * The pending messages with the given ids, by id; the store parks them, then calls {@link #finished}.
     *
     * @param ids the ids; unknown ones are left out
     * @return a new map of the pending messages found, by id
     */
    synchronized Map<Long, Pending> pending(Collection<Long> ids) {
        Map<Long, Pending> found = new LinkedHashMap<>();
        for (Long id : ids) {
            Pending p = pending.get(id);
            if (p != null) {
                found.put(id, p);
            }
        }
        return found;
    }

    /**
     * How many messages this leader received and has not finished (0 after {@link #stop()}).
     *
     * @return the count, 0 or more
     */
    synchronized long pendingCount() {
        return pending.size();
    }

    /**
     * The commit time of the oldest pending message, empty when none is pending.
     *
     * @return the commit time, or empty
     */
    synchronized Optional<Instant> oldestCommitTime() {
        return pending.isEmpty() ? Optional.empty()
                : Optional.of(pending.first().message().commitTime());
    }

    /**
     * Whether a stream is open.
     *
     * @return true between the read that opened a stream and its failure or {@link #stop()}
     */

    synchronized boolean streaming() {
        return stream != null;
    }

    /**
     * Closes the stream and forgets every pending message (the engine stopped harvesting): the next read opens a new
     * stream, which starts after the confirmed position. Idempotent.
     */
    void stop() {
        CommitStream s;
        synchronized (this) {
            s = stream;
            stream = null;
            pending.clear();
            ends.clear();
            receivedEnd = 0;
            receivedPosition = 0;
            confirmed = 0;
            done.clear();
            doneByEnd.clear();
            unsaved.clear();
            loaded = false;
        }
        if (s != null) {
            s.close();
        }
    }
}
