package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.CommitLog;
import dev.outbox.spi.CommitStream;
import dev.outbox.spi.DeliveryOptions;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.StoreFaults.Failure;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;

import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;

/**
 * One process's {@link Store} over an {@link InMemoryCommitLog}, a {@link CommitLog} harvested by streaming as the
 * Postgres store's WAL harvest is: the dispatcher harvests it with its own stream harvest; {@link #park} writes a
 * message to the log's parked area; {@link #replay} appends parked messages to the log as a new committed
 * transaction. Its {@link #purge}, {@link #retryLater} and table {@code park} find no rows: the messages are not
 * rows. Give each process (each dispatcher) its own store on the shared log: the stream is opened in its name.
 *
 * <ul>
 *   <li>Opening the stream while another process holds the slot fails for {@code takeoverTimeout} from this
 *       process's first try, then takes the slot over (the holder is terminated, as the Postgres store does with
 *       {@code pg_terminate_backend} once the lease proves the holder deposed).</li>
 *   <li>{@link #readWait()} is zero: a read never waits, so that a deterministic scheduler stays in control.</li>
 *   <li>{@link #setFaults} applies a {@link StoreFaults} plan where it means something on a stream: a failed
 *       {@code READ} loses the stream at a poll (before its status update with {@link Failure#BEFORE}, after it with
 *       {@link Failure#AFTER}): the read fails and the next one opens a new stream; a {@code PURGE} fault hits the
 *       ledger's append (which every purge and park of the dispatcher makes), a {@code PARK} fault the write to the
 *       parked area: they fail before their change, after it, or are refused. A failure record lives in the
 *       dispatcher's memory, so {@code RETRY_LATER} has nothing to fail.</li>
 *   <li>{@link #confirmOnRead} plants a bug for tests: the stream is confirmed as soon as messages are read.</li>
 * </ul>
 *
 * <p>Thread-safe.
 */
public final class InMemoryStreamStore implements Store, CommitLog, ParkedRecords, Gauges {
    private final InMemoryCommitLog log;
    private final String name;
    private final Clock clock;
    private final Duration takeoverTimeout;
    private final Publisher publisher = new LogPublisher();
    private volatile StoreFaults faults = StoreFaults.none();
    private volatile boolean confirmOnRead;
    /** When this process first found the slot held by another, in clock millis; -1 when it did not. */
    private long busySince = -1;

    /**
     * @param log             the shared log (the database)
     * @param name            this process's name, for messages
     * @param clock           the time of takeovers and parking
     * @param takeoverTimeout how long this process lets another hold the slot before it terminates it
     */
    public InMemoryStreamStore(InMemoryCommitLog log, String name, Clock clock, Duration takeoverTimeout) {
        this.log = Objects.requireNonNull(log, "log");
        this.name = Objects.requireNonNull(name, "name");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.takeoverTimeout = Objects.requireNonNull(takeoverTimeout, "takeoverTimeout");
    }

    /**
     * Replaces the fault plan; takes effect from the next operation, on any thread.
     *
     * @param faults the plan, {@link StoreFaults#none()} to inject nothing; not {@code null}
     * @throws NullPointerException if {@code faults} is {@code null}
     */
    public void setFaults(StoreFaults faults) {
        this.faults = Objects.requireNonNull(faults, "faults");
    }

    /**
     * A planted bug, for tests that prove the simulation finds it: every poll confirms the stream up to the last
     * message it returned, before the engine finished it.
     *
     * @param value {@code true} to plant the bug in streams opened from now on; {@code false} (the default) to
     *              confirm only what the engine finished, as the real harvest does
     */
    public void confirmOnRead(boolean value) {
        this.confirmOnRead = value;
    }

    // ---- the commit log -------------------------------------------------------------------------------------

    @Override
    public CommitStream open() {
        long now = clock.millis();
        boolean takeOver;
        synchronized (this) {
            String holder = log.holder();
            if (holder == null) {
                busySince = -1;
                takeOver = false;
            } else {
                if (busySince < 0) {
                    busySince = now;
                }
                takeOver = now - busySince >= takeoverTimeout.toMillis();
            }
        }
        CommitStream s = log.open(name, takeOver);
        synchronized (this) {
            busySince = -1;
        }
        return new PlannedStream(s, confirmOnRead);
    }

    @Override
    public MarkedRow decode(long id, CommitStream.StreamMessage m) {
        InMemoryCommitLog.Decoded d;
        try {
            d = InMemoryCommitLog.decode(m.payload());
        } catch (RuntimeException e) {
            return new MarkResult.Rejected(id, null, null, 0, "undecodable message at " + m.position());
        }
        return new MarkedRow.Readable(new OutboxRecord(id, m.commitTime(), d.message(), 0, null,
                new UUID(0L, d.writerId())));
    }

    /**
     * The writer id a record read from this store carries, as its message id ({@code new UUID(0, writerId)}): the
     * in-memory encoding carries it, as the Postgres store's carries a message id.
     *
     * @param record a record read from an {@code InMemoryStreamStore}; not {@code null}
     * @return the id {@link InMemoryCommitLog.Transaction#write} returned when the message was written
     */
    public static long writerId(OutboxRecord record) {
        return record.messageId().getLeastSignificantBits();
    }

    // ---- the port -------------------------------------------------------------------------------------------

    @Override
    public Publisher publisher() {
        return publisher;
    }

    @Override
    public Duration readWait() {
        return Duration.ZERO;
    }

    @Override
    public long appendLedger(Map<Long, Long> finished) {
        Fault f = before(Operation.PURGE);
        long confirmed = log.appendLedger(finished);
        after(f, "the ledger's append");
        return confirmed;
    }

    @Override
    public Map<Long, Long> loadLedger() {
        return log.loadLedger();
    }

    @Override
    public void park(List<Parked> messages) {
        Objects.requireNonNull(messages, "messages");
        Fault f = before(Operation.PARK);
        for (Parked p : messages) {
            String topic = null;
            String key = null;
            int attempts = 0;
            if (p.row() instanceof MarkedRow.Readable r) {
                topic = r.record().topic();
                key = r.record().key();
                attempts = r.record().attempts();
            } else if (p.row() instanceof MarkResult.Rejected r) {
                topic = r.topic();
                key = r.key();
                attempts = r.attempts();
            }
            log.park(p.message().payload(), topic, key, attempts, p.reason());
        }
        after(f, "park");
    }

    // ---- the port: no rows --------------------------------------------------------------------------------

    /** No rows: the messages are finished by the dispatcher's stream harvest. */
    @Override
    public void purge(Collection<Long> ids) {
        Objects.requireNonNull(ids, "ids");
    }

    /** No rows: a failure record lives in the dispatcher's memory. */
    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        Objects.requireNonNull(nextAttempts, "nextAttempts");
    }

    /** No rows: the dispatcher parks a streamed message through {@link #park(List)}. */
    @Override
    public void park(Map<Long, String> reasons) {
        Objects.requireNonNull(reasons, "reasons");
    }

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        return ParkedPages.page(query, allParked());
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        return ParkedPages.count(query, allParked());
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        for (InMemoryCommitLog.ParkedEntry p : log.parked(Integer.MAX_VALUE)) {
            if (p.parkedId() == id) {
                return Optional.of(new ParkedMessage(toRecord(p), null, p.payload(), List.of(), null));
            }
        }
        return Optional.empty();
    }

    @Override
    public int discard(Collection<Long> ids) {
        return log.discard(Objects.requireNonNull(ids, "ids"));
    }

    private List<ParkedRecord> allParked() {
        List<ParkedRecord> out = new ArrayList<>();
        for (InMemoryCommitLog.ParkedEntry p : log.parked(Integer.MAX_VALUE)) {
            out.add(toRecord(p));
        }
        return out;
    }

    private static ParkedRecord toRecord(InMemoryCommitLog.ParkedEntry p) {
        return new ParkedRecord(p.parkedId(), p.topic(), p.key(), p.attempts(), p.reason(), p.parkedAt());
    }

    @Override
    public int replay(Collection<Long> ids) {
        return log.replay(Objects.requireNonNull(ids, "ids"));
    }

    /** The messages the log retains (committed, not confirmed); the dispatcher counts what its leader holds. */
    @Override
    public long backlog() {
        return log.retainedCount();
    }

    @Override
    public long parkedCount() {
        return log.parkedCount();
    }

    /** Empty: the dispatcher takes the head's commit time from what its leader received. */
    @Override
    public Optional<Instant> oldestCreateTime() {
        return Optional.empty();
    }

    @Override
    public OptionalLong retainedBytes() {
        return OptionalLong.of(log.retainedBytes());
    }

    @Override
    public String toString() {
        return "InMemoryStreamStore{" + name + '}';
    }

    // ---- internals ------------------------------------------------------------------------------------------

    private Fault before(Operation op) {
        Fault f = faults.decide(op);
        if (f.failure() == Failure.REFUSED) {
            throw new StoreException("injected fault: " + op + " refused for good", null, false);
        }
        if (f.failure() == Failure.BEFORE) {
            throw new StoreException("injected fault: " + op + " failed before any change", null, true);
        }
        return f;
    }

    private static void after(Fault f, String what) {
        if (f.failure() == Failure.AFTER) {
            throw new StoreException("injected fault: " + what + " was applied but reported as failed", null, true);
        }
    }

    private final class LogPublisher implements Publisher {
        @Override
        public void publish(Connection connection, List<OutboxMessage> messages) {
            DeliveryOptions.check(messages, false, false, "InMemoryStreamStore");
            log.commit(messages);
        }
    }

    /**
     * The stream as this process sees it: the {@code READ} faults at each poll (the stream is lost, before or after its
     * status update) and, if planted, the bug that confirms the stream up to the end of the last message each poll
     * returned.
     */
    private final class PlannedStream implements CommitStream {
        private final CommitStream s;
        private final boolean confirmOnRead;

        PlannedStream(CommitStream s, boolean confirmOnRead) {
            this.s = s;
            this.confirmOnRead = confirmOnRead;
        }

        @Override
        public List<StreamMessage> poll(int max, Duration wait) {
            Fault f = faults.decide(Operation.READ);
            if (f.failure() == Failure.BEFORE || f.failure() == Failure.AFTER) {
                if (name.equals(log.holder())) {
                    log.terminateHolder(f.failure() == Failure.AFTER);
                } else {
                    throw new StoreException("injected fault: the replication stream failed", null, true);
                }
            }
            List<StreamMessage> got = s.poll(max, wait);
            if (confirmOnRead && !got.isEmpty()) {
                s.confirm(got.get(got.size() - 1).endPosition());
            }
            return got;
        }

        @Override
        public void wakeup() {
            s.wakeup();
        }

        @Override
        public void confirm(long position) {
            s.confirm(position);
        }

        @Override
        public long readPosition() {
            return s.readPosition();
        }

        @Override
        public void close() {
            s.close();
        }
    }
}
