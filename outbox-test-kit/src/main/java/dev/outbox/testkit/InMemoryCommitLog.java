package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.spi.CommitStream;
import dev.outbox.spi.StoreException;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A database's commit log held in memory, as a Postgres WAL with one logical replication slot presents it to a
 * stream harvest: the database side of {@link InMemoryStreamStore}, shared by every process (every store) of a test.
 *
 * <ul>
 *   <li>A writer's {@link Transaction} appends its messages to the log when it commits, in the order it wrote
 *       them, each at its own position, followed by the transaction's end position; a rolled-back transaction
 *       appends nothing. So the log is in commit order: a transaction that began first but commits last comes
 *       last, and nothing is ever "late".</li>
 *   <li>The slot remembers a confirmed position. {@link #open} returns a {@link CommitStream} that starts with the
 *       first transaction ending after it. A stream's {@link CommitStream#confirm confirm} is kept by the stream
 *       and reaches the slot with its next status update: at its next {@link CommitStream#poll poll}, and when it
 *       is closed in order. A stream that is terminated or lost first loses it, as on Postgres.</li>
 *   <li>One stream holds the slot at a time. {@link #open} while another holds it fails, unless the caller asks to
 *       take it over: the holder is then terminated (as {@code pg_terminate_backend} does), its next poll fails and
 *       its unsent confirmation is lost.</li>
 *   <li>The parked area stays a table: parked messages by a parked id, replayed as new committed transactions.</li>
 * </ul>
 *
 * <p>A poll never waits: a test that runs on a deterministic scheduler must not block outside it.
 *
 * <p>Thread-safe: every call is atomic under one lock.
 */
public final class InMemoryCommitLog {

    /** A message of the log, as the stream delivers it, with the writer's id it carries. */
    private record Entry(CommitStream.StreamMessage message, long writerId) {
    }

    /** A parked message. */
    record ParkedEntry(long parkedId, byte[] payload, String topic, String key, int attempts, String reason,
                       Instant parkedAt) {
    }

    private final Object lock = new Object();
    private final Clock clock;
    private final AtomicLong writerIds = new AtomicLong();
    /** The committed messages in commit order. Guarded by lock. */
    private final List<Entry> log = new ArrayList<>();
    /** The last position taken. Guarded by lock. */
    private long position;
    /** The replication slot and its streams. */
    private final CommitLogSlot slot = new CommitLogSlot(lock, this);
    /** The stream harvest's ledger, as the database would keep it. */
    private final CommitLogLedger ledger = new CommitLogLedger();
    /** The parked area. */
    private final CommitLogParkedArea parked;

    /**
     * An empty log whose commit and parking times come from {@code clock}.
     *
     * @param clock the source of commit and parking times; a virtual clock (the simulation's) makes them
     *              predictable. Not {@code null}.
     * @throws NullPointerException if {@code clock} is {@code null}
     */
    public InMemoryCommitLog(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
        this.parked = new CommitLogParkedArea(lock, clock);
    }

    // ---- writing ------------------------------------------------------------------------------------------

    /**
     * Begins a writer's transaction: its messages take writer ids at once and enter the log on commit.
     *
     * @return a new open transaction
     */
    public Transaction begin() {
        return new Transaction();
    }

    /**
     * Writes and commits one transaction of {@code messages} at once; returns their writer ids.
     *
     * @param messages the messages, in the order written; none {@code null}. An empty list appends nothing.
     * @return their writer ids, ascending, in the order of {@code messages}
     * @throws NullPointerException if {@code messages} or one of them is {@code null}
     */
    public List<Long> commit(List<OutboxMessage> messages) {
        Transaction tx = begin();
        for (OutboxMessage m : messages) {
            tx.write(m);
        }
        tx.commit();
        return tx.ids();
    }

    /**
     * A writer's transaction. Not thread-safe, like a connection.
     */
    public final class Transaction implements TestTransaction {
        private final List<OutboxMessage> messages = new ArrayList<>();
        private final List<Long> ids = new ArrayList<>();
        /** Each message's position, taken when it is written (as Postgres writes a logical message's WAL record). */
        private final List<Long> positions = new ArrayList<>();
        private boolean ended;

        private Transaction() {
        }

        /**
         * Writes {@code message}; returns its writer id, taken at once (ascending in the order of writes).
         *
         * @param message the message; not {@code null}
         * @return its writer id, higher than every writer id taken before in this log, by any transaction
         * @throws NullPointerException  if {@code message} is {@code null}
         * @throws IllegalStateException if the transaction has ended
         */
        public long write(OutboxMessage message) {
            check("write");
            Objects.requireNonNull(message, "message");
            long id = writerIds.incrementAndGet();
            messages.add(message);
            ids.add(id);
            synchronized (lock) {
                positions.add(++position);
            }
            return id;
        }

        @Override
        public void publish(List<OutboxMessage> batch) {
            for (OutboxMessage m : batch) {
                write(m);
            }
        }

        /**
         * The writer ids taken so far.
         *
         * @return an immutable copy of the writer ids of this transaction's writes, in order
         */
        public List<Long> ids() {
            return List.copyOf(ids);
        }

        /** Appends the messages to the log, one transaction. */
        @Override
        public void commit() {
            check("commit");
            ended = true;
            synchronized (lock) {
                append(messages, ids, positions);
            }
        }

        @Override
        public void rollback() {
            check("roll back");
            ended = true;
        }

        @Override
        public void close() {
            if (!ended) {
                rollback();
            }
        }

        private void check(String what) {
            if (ended) {
                throw new IllegalStateException("cannot " + what + ": the transaction has ended");
            }
        }
    }

    /**
     * Caller holds lock. One committed transaction, its messages at the positions they took when written (a
     * transaction that wrote early and commits late has positions below those of transactions that committed in
     * between, as in Postgres), all with the transaction's end position, taken now.
     */
    private void append(List<OutboxMessage> messages, List<Long> ids, List<Long> positions) {
        if (messages.isEmpty()) {
            return;
        }
        long end = ++position;
        Instant now = clock.instant();
        for (int i = 0; i < messages.size(); i++) {
            long id = ids.get(i);
            log.add(new Entry(new CommitStream.StreamMessage(positions.get(i), end, now,
                    CommitLogCodec.encode(id, messages.get(i))), id));
        }
    }

    /** The number of messages in the log. Caller holds {@link #lock}. */
    int size() {
        return log.size();
    }

    /** The message at {@code index} of the log, in commit order. Caller holds {@link #lock}. */
    CommitStream.StreamMessage message(int index) {
        return log.get(index).message();
    }

    /** The last position taken. Caller holds {@link #lock}. */
    long position() {
        return position;
    }

    // ---- the slot -------------------------------------------------------------------------------------------

    /**
     * Appends to the stream harvest's ledger (see {@code CommitLog.appendLedger}) the entries that end after the slot's
     * confirmed position, forgets those that no longer do, and returns that position.
     *
     * @param finished per message position, the end position of its transaction, for messages the harvest
     *                 finished; not {@code null}, may be empty
     * @return the slot's confirmed position: entries ending at or below it are dropped
     */
    public long appendLedger(Map<Long, Long> finished) {
        synchronized (lock) {
            ledger.append(finished, slot.confirmed());
            return slot.confirmed();
        }
    }

    /**
     * The stream harvest's ledger as last saved.
     *
     * @return an immutable map of message position to end position, empty before the first save
     */
    public Map<Long, Long> loadLedger() {
        synchronized (lock) {
            return ledger.load();
        }
    }

    /**
     * Opens a stream on the slot, starting with the first transaction that ended after the confirmed position.
     *
     * @param owner    who opens it, for messages
     * @param takeOver whether to terminate a stream that holds the slot (else the open fails while one does)
     * @return the new stream, now the slot's holder; its polls never wait
     * @throws StoreException if another stream holds the slot and {@code takeOver} is false
     */
    public CommitStream open(String owner, boolean takeOver) {
        return slot.open(owner, takeOver);
    }

    /**
     * Who holds the slot, or null.
     *
     * @return the owner named when the holding stream was {@linkplain #open opened}, or {@code null} if no stream
     *         holds the slot
     */
    public String holder() {
        return slot.holder();
    }

    /**
     * Terminates the stream that holds the slot, if any, as a lost connection does: its next poll fails and its
     * unsent confirmation is lost. With {@code statusFirst}, its last confirmation reaches the slot first.
     *
     * @param statusFirst {@code true} to deliver the holder's pending confirmation before terminating it (a
     *                    connection lost just after a status update), {@code false} to lose it
     */
    public void terminateHolder(boolean statusFirst) {
        slot.terminateHolder(statusFirst);
    }

    /**
     * The slot's confirmed position.
     *
     * @return the position up to which the slot has released the log, 0 before the first confirmation
     */
    public long confirmedPosition() {
        synchronized (lock) {
            return slot.confirmed();
        }
    }

    /**
     * The writer ids of the committed messages that the slot still holds (ending after its confirmed position).
     *
     * @return a new list of writer ids, in commit order
     */
    public List<Long> retained() {
        synchronized (lock) {
            List<Long> ids = new ArrayList<>();
            for (Entry e : log) {
                if (e.message().endPosition() > slot.confirmed()) {
                    ids.add(e.writerId());
                }
            }
            return ids;
        }
    }

    /**
     * How many committed messages the slot still holds.
     *
     * @return the count of messages ending after the confirmed position
     */
    public int retainedCount() {
        synchronized (lock) {
            int n = 0;
            for (int i = log.size() - 1; i >= 0 && log.get(i).message().endPosition() > slot.confirmed(); i--) {
                n++;
            }
            return n;
        }
    }

    /**
     * The bytes of payload the slot still holds.
     *
     * @return the total size of the encoded messages the slot holds, as the WAL it keeps on a database
     */
    public long retainedBytes() {
        synchronized (lock) {
            long n = 0;
            for (Entry e : log) {
                if (e.message().endPosition() > slot.confirmed()) {
                    n += e.message().payload().length;
                }
            }
            return n;
        }
    }

    /** The commit time of the oldest message the slot still holds. */
    Instant oldestRetained() {
        synchronized (lock) {
            for (Entry e : log) {
                if (e.message().endPosition() > slot.confirmed()) {
                    return e.message().commitTime();
                }
            }
            return null;
        }
    }

    // ---- the parked area ------------------------------------------------------------------------------------

    /** Parks one message; returns its parked id. */
    long park(byte[] payload, String topic, String key, int attempts, String reason) {
        return parked.park(payload, topic, key, attempts, reason);
    }

    List<ParkedEntry> parked(int limit) {
        return parked.parked(limit);
    }

    long parkedCount() {
        return parked.parkedCount();
    }

    /** Deletes the given parked messages for good; returns how many there were. */
    int discard(Collection<Long> ids) {
        return parked.discard(ids);
    }

    /** Removes the given parked messages and appends them to the log as one new committed transaction. */
    int replay(Collection<Long> parkedIdsToReplay) {
        synchronized (lock) {
            List<OutboxMessage> messages = new ArrayList<>();
            List<Long> ids = new ArrayList<>();
            parked.take(parkedIdsToReplay, messages, ids);
            List<Long> positions = new ArrayList<>();
            messages.forEach(m -> positions.add(++position));
            append(messages, ids, positions);
            return messages.size();
        }
    }

    /**
     * The writer ids of every parked message.
     *
     * @return a new list of writer ids, in the order the messages were parked
     */
    public List<Long> parkedWriterIds() {
        return parked.writerIds();
    }

    /**
     * What the simulation's state hashing sees: the log's writer ids and ends, the slot, the holder, the parked.
     *
     * @return a compact text, equal for equal states; its format may change
     */
    public String describe() {
        synchronized (lock) {
            StringBuilder sb = new StringBuilder();
            for (Entry e : log) {
                sb.append(e.writerId()).append('/').append(e.message().endPosition()).append(',');
            }
            slot.describe(sb);
            sb.append("|parked ").append(parked.ids());
            return sb.toString();
        }
    }

    // ---- the encoding ---------------------------------------------------------------------------------------

    /**
     * A message as a writer emitted it, with the writer id it carries.
     *
     * @param writerId the id its {@link Transaction#write} returned
     * @param message  the message as written: topic, key, value and headers
     */
    public record Decoded(long writerId, OutboxMessage message) {
    }

    /**
     * Decodes a payload of this log's streams: the in-memory encoding of an emitted message (the writer id, the
     * topic, the key or none, the value or none, then the headers).
     *
     * @param payload a message's payload as the log's streams deliver it; not {@code null}
     * @return the writer id and the message
     * @throws java.io.UncheckedIOException if {@code payload} is truncated or not this encoding
     */
    public static Decoded decode(byte[] payload) {
        return CommitLogCodec.decode(payload);
    }
}
