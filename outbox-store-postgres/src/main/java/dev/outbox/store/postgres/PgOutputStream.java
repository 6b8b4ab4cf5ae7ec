package dev.outbox.store.postgres;

import dev.outbox.spi.Backoff;
import dev.outbox.spi.CommitStream;
import dev.outbox.spi.StoreException;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * A {@link CommitStream} read from a Postgres logical replication slot with the {@code pgoutput} plugin
 * ({@code proto_version} 1, {@code messages} on): the transactional logical messages
 * ({@code pg_logical_emit_message(true, prefix, content)}) whose prefix is the configured one, in commit order.
 * Every other message (other prefixes, non-transactional messages, row changes of published tables) is skipped,
 * but still advances {@link #readPosition()}.
 *
 * <p><b>Threads.</b> One reader thread ({@code outbox-wal-reader-<slot>}) owns the replication connection. It
 * reads with pgjdbc's {@code readPending()}, which waits at most 1 ms for input (not with the blocking
 * {@code read()}, which holds the connection's lock while it waits, so that neither a status update nor the goodbye
 * of {@link #close()} could be sent meanwhile); it decodes, and puts each committed transaction's messages into a
 * bounded buffer that {@link #poll} takes from. When
 * {@link WalStreamSettings#bufferedMessages()} messages wait there, it stops reading (the server's sends then
 * wait on TCP) but keeps sending status updates every {@link WalStreamSettings#statusInterval()}, so the server
 * never times the stream out ({@code wal_sender_timeout}) while the harvest is slow or stalled. A transaction is
 * always buffered whole (its end position is only known at its commit), so the buffer may hold one transaction
 * more than the bound.
 *
 * <p><b>Positions.</b> {@link StreamMessage#position()} is the message's own LSN; {@link StreamMessage#endPosition()}
 * the end LSN of its transaction (from the commit message); confirming it makes a later stream start after that
 * transaction (Postgres skips a transaction whose commit record starts before the slot's confirmed flush LSN).
 * {@link #readPosition()} only moves past what {@link #poll} has returned in full: to the end of the last
 * transaction whose messages were all returned, or, when nothing is buffered, to the end of the last transaction
 * or keep-alive read (pgjdbc raises its received LSN to a keep-alive's WAL end), so that confirming it never skips
 * a buffered message.
 *
 * <p><b>Exclusivity.</b> Postgres lets one connection stream a slot at a time. {@link #open} waits up to
 * {@link WalStreamSettings#takeOverTimeout()} for another holder to let go, then terminates that backend
 * ({@code pg_terminate_backend}, which needs superuser, membership in {@code pg_signal_backend}, or the same
 * role) and takes the slot. {@link #close()} reports the confirmed position and ends the connection, so the slot
 * is free at once.
 *
 * <p>Thread-safe as {@link CommitStream} requires.
 */
final class PgOutputStream implements CommitStream {
    private static final Logger LOG = LoggerFactory.getLogger(PgOutputStream.class);
    /** Microseconds from 1970-01-01 to 2000-01-01, the Postgres epoch. */
    private static final long PG_EPOCH_MICROS = 946_684_800_000_000L;
    private static final long MIN_IDLE_MICROS = 50;
    static final long MAX_IDLE_MICROS = 1_000;
    /** The reader's parks while the server answers at once with nothing: MIN_IDLE_MICROS doubling to MAX. */
    private static final Backoff IDLE_WAITS = Backoff.exponential(Duration.ofNanos(MIN_IDLE_MICROS * 1_000),
            Duration.ofNanos(MAX_IDLE_MICROS * 1_000));
    /** Waits for a slot another process still streams, until the take-over point: 10 ms doubling to 500 ms. */
    private static final Backoff TAKEOVER_WAITS = Backoff.exponential(Duration.ofMillis(10), Duration.ofMillis(500));
    private static final long QUICK_ANSWER_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    /** How long close() waits for the reader to say goodbye before it cuts the socket. */
    private static final Duration CLOSE_GRACE = Duration.ofSeconds(2);
    private static final String OBJECT_IN_USE = "55006";

    private final WalStreamSettings settings;
    private final Connection connection;
    private final PGReplicationStream stream;
    private final byte[] prefix;
    private final Thread reader;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition notEmpty = lock.newCondition();
    private final Condition notFull = lock.newCondition();
    /** Complete transactions' messages not yet polled, in commit order. Guarded by lock. */
    private final ArrayDeque<StreamMessage> buffer = new ArrayDeque<>();
    /** The end of the last transaction or keep-alive the reader saw (a transaction boundary). Guarded by lock. */
    private long readEnd;
    /** Written under lock; read without. */
    private volatile long readPosition;
    /** Guarded by lock. */
    private Throwable failure;
    /** Guarded by lock; written true once. */
    private volatile boolean closed;
    /** A {@link #wakeup()} not yet taken by a poll. Guarded by lock. */
    private boolean woken;
    private final AtomicLong confirmed = new AtomicLong();

    private PgOutputStream(WalStreamSettings settings, Connection connection, PGReplicationStream stream) {
        this.settings = settings;
        this.connection = connection;
        this.stream = stream;
        this.prefix = settings.messagePrefix().getBytes(StandardCharsets.UTF_8);
        this.reader = new Thread(this::readLoop, "outbox-wal-reader-" + settings.slot());
        this.reader.setDaemon(true);
    }

    /**
     * Opens a stream on {@code settings.slot()}, which must exist ({@link #createSlotAndPublication}); re-creates it
     * if Postgres invalidated it (logged at ERROR with the loss window), and takes it over from another connection
     * that streams it (after {@link WalStreamSettings#takeOverTimeout()}, logged at WARN with its pid).
     *
     * @throws StoreException retriable if the database cannot be reached or the slot stays taken; not retriable if
     *                        the slot does not exist or belongs to another plugin or database
     */
    static PgOutputStream open(WalStreamSettings settings) {
        Objects.requireNonNull(settings, "settings");
        long start = System.nanoTime();
        long takeOver = settings.takeOverTimeout().toNanos();
        // Past the take-over point the holder is terminated; give the whole open a bound all the same.
        long giveUp = takeOver + TimeUnit.SECONDS.toNanos(30);
        Backoff.Sequence waits = TAKEOVER_WAITS.sequence();
        while (true) {
            ReplicationSlots.SlotState slot = ReplicationSlots.state(settings);
            if (slot.invalidated()) {
                ReplicationSlots.recreateInvalidated(settings, slot);
                continue;
            }
            if (slot.activePid() != 0) {
                long waited = System.nanoTime() - start;
                if (waited >= giveUp) {
                    throw new StoreException("replication slot " + settings.slot() + " is still streamed by pid "
                            + slot.activePid() + " after " + Duration.ofNanos(waited), null, true);
                }
                if (waited >= takeOver) {
                    ReplicationSlots.terminate(settings, slot.activePid(), waited);
                } else {
                    pause(Math.min(TimeUnit.NANOSECONDS.toMillis(waits.nextNanos()),
                            TimeUnit.NANOSECONDS.toMillis(takeOver - waited) + 1));
                }
                continue;
            }
            PgOutputStream opened = tryStart(settings);
            if (opened != null) {
                LOG.info("Streaming replication slot {} (publication {}, prefix '{}') from {}", settings.slot(),
                        settings.publication(), settings.messagePrefix(), lsn(slot.confirmedFlush()));
                return opened;
            }
            // Someone took the slot between the look and the start: go round (wait, then take over).
            if (System.nanoTime() - start >= giveUp) {
                throw new StoreException("replication slot " + settings.slot() + " stays in use after "
                        + Duration.ofNanos(System.nanoTime() - start), null, true);
            }
            pause(TimeUnit.NANOSECONDS.toMillis(waits.nextNanos()));
        }
    }

    /** Starts streaming, or returns null if the slot is in use by another connection. */
    private static PgOutputStream tryStart(WalStreamSettings settings) {
        Connection connection;
        try {
            connection = settings.replicationConnections().get();
        } catch (RuntimeException e) {
            throw new StoreException("cannot open a replication connection for slot " + settings.slot() + ": "
                    + e.getMessage(), e, true);
        }
        try {
            PGReplicationStream stream = connection.unwrap(PGConnection.class).getReplicationAPI()
                    .replicationStream()
                    .logical()
                    .withSlotName(settings.slot())
                    .withSlotOption("proto_version", "1")
                    .withSlotOption("publication_names", quoteIdentifier(settings.publication()))
                    .withSlotOption("messages", "true")
                    .withStatusInterval(Math.toIntExact(settings.statusInterval().toMillis()), TimeUnit.MILLISECONDS)
                    // Never let the driver confirm on its own: only confirm() moves the flush position.
                    .withAutomaticFlush(false)
                    .start();
            // pgjdbc sets the socket timeout to the status interval, for its blocking read() to wake up and send
            // status updates; a timeout in the middle of a message would then be taken for "nothing yet" and leave
            // the stream out of step. This reader never blocks waiting for a message to start (readPending), so
            // once one started it waits for the rest.
            connection.setNetworkTimeout(Runnable::run, 0);
            PgOutputStream opened = new PgOutputStream(settings, connection, stream);
            opened.reader.start();
            return opened;
        } catch (SQLException e) {
            closeQuietly(connection);
            if (OBJECT_IN_USE.equals(e.getSQLState())) {
                return null;
            }
            throw new StoreException("cannot start streaming replication slot " + settings.slot() + " (SQLSTATE "
                    + e.getSQLState() + "): " + e.getMessage(), e, retriable(e));
        } catch (RuntimeException | Error e) {
            closeQuietly(connection);
            throw e;
        }
    }

    @Override
    public List<StreamMessage> poll(int max, Duration wait) {
        if (max < 1) {
            throw new IllegalArgumentException("max " + max + " is below 1");
        }
        Objects.requireNonNull(wait, "wait");
        lock.lock();
        try {
            long left = wait.toNanos();
            while (buffer.isEmpty() || failure != null || closed) {
                checkOpen();
                if (left <= 0 || woken) {
                    woken = false;
                    return List.of();
                }
                left = notEmpty.awaitNanos(left);
            }
            woken = false;
            int n = Math.min(max, buffer.size());
            List<StreamMessage> taken = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                taken.add(buffer.poll());
            }
            StreamMessage next = buffer.peek();
            if (next == null) {
                advanceReadPosition(readEnd);
            } else {
                long lastEnd = taken.get(n - 1).endPosition();
                if (next.endPosition() != lastEnd) {
                    advanceReadPosition(lastEnd);
                }
            }
            notFull.signalAll();
            return taken;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException("interrupted while polling replication slot " + settings.slot(), e, true);
        } finally {
            lock.unlock();
        }
    }

    /** Cuts short a {@link #poll} waiting for a message, or the next one that would wait. */
    @Override
    public void wakeup() {
        lock.lock();
        try {
            woken = true;
            notEmpty.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (failure != null) {
            throw new StoreException("the replication stream of slot " + settings.slot() + " failed: "
                    + describe(failure), failure, true);
        }
        if (closed) {
            throw new StoreException("the replication stream of slot " + settings.slot() + " is closed", null,
                    true);
        }
    }

    @Override
    public void confirm(long position) {
        confirmed.accumulateAndGet(position, (a, b) -> Long.compareUnsigned(a, b) >= 0 ? a : b);
    }

    @Override
    public long readPosition() {
        return readPosition;
    }

    /** The highest position {@linkplain #confirm confirmed} so far (0 before any). */
    long confirmedPosition() {
        return confirmed.get();
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            notEmpty.signalAll();
            notFull.signalAll();
        } finally {
            lock.unlock();
        }
        LockSupport.unpark(reader);
        if (Thread.currentThread() == reader) {
            return;
        }
        try {
            reader.join(CLOSE_GRACE.toMillis());
            if (reader.isAlive()) {
                LOG.warn("The reader of replication slot {} did not stop within {}: cutting its connection",
                        settings.slot(), CLOSE_GRACE);
                connection.abort(Runnable::run);
                reader.join(CLOSE_GRACE.toMillis());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (SQLException e) {
            LOG.warn("Cutting the replication connection of slot {} failed: {}", settings.slot(), describe(e));
        }
        LOG.info("Closed the stream of replication slot {} (confirmed {})", settings.slot(), lsn(confirmed.get()));
    }

    /** The least time between two status updates sent because the confirmed position moved. */
    private static final long CONFIRM_GAP_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    // ---- the reader thread ----

    private void readLoop() {
        Decoder decoder = new Decoder();
        long pushed = 0;
        Backoff.Sequence idle = IDLE_WAITS.sequence();
        long statusNanos = settings.statusInterval().toNanos();
        long lastForced = System.nanoTime();
        long lastSeen = 0;
        try {
            while (true) {
                long toConfirm = confirmed.get();
                if (toConfirm != pushed) {
                    stream.setFlushedLSN(LogSequenceNumber.valueOf(toConfirm));
                    stream.setAppliedLSN(LogSequenceNumber.valueOf(toConfirm));
                    pushed = toConfirm;
                    // A confirmation goes out at once (at most one status update per CONFIRM_GAP_NANOS): what the
                    // slot has not heard of is what the harvest's ledger must keep, and rewrite at every purge.
                    if (System.nanoTime() - lastForced >= CONFIRM_GAP_NANOS) {
                        stream.forceUpdateStatus();
                        lastForced = System.nanoTime();
                    }
                }
                if (closed) {
                    stream.forceUpdateStatus();
                    break;
                }
                if (awaitSpace(statusNanos)) {
                    if (System.nanoTime() - lastForced >= statusNanos) {
                        stream.forceUpdateStatus();
                        lastForced = System.nanoTime();
                    }
                    continue;
                }
                long asked = System.nanoTime();
                ByteBuffer data = stream.readPending();
                if (data != null) {
                    idle.reset();
                    decoder.decode(data);
                    continue;
                }
                if (!decoder.inTransaction()) {
                    long seen = stream.getLastReceiveLSN().asLong();
                    if (seen != lastSeen) {
                        lastSeen = seen;
                        boundary(List.of(), seen);
                    }
                }
                // pgjdbc's replication stream looks for input with a read of up to 1 ms (a socket timeout), which
                // returns as soon as data arrives: that is the wait. Only if it answered at once (a closed socket
                // answers at once, until a status update finds it broken) does the reader park, not to spin.
                if (System.nanoTime() - asked < QUICK_ANSWER_NANOS) {
                    LockSupport.parkNanos(this, idle.nextNanos());
                }
            }
        } catch (Throwable t) {
            fail(t);
        } finally {
            closeQuietly(connection);
        }
    }

    /** Waits (up to {@code maxNanos}) while the buffer is full; returns whether it still is. */
    private boolean awaitSpace(long maxNanos) throws InterruptedException {
        lock.lock();
        try {
            if (buffer.size() < settings.bufferedMessages()) {
                return false;
            }
            notFull.awaitNanos(Math.min(maxNanos, TimeUnit.MILLISECONDS.toNanos(100)));
            return buffer.size() >= settings.bufferedMessages() && !closed;
        } finally {
            lock.unlock();
        }
    }

    /** A transaction (with {@code messages}, possibly none) or keep-alive ended at {@code end}. */
    private void boundary(List<StreamMessage> messages, long end) {
        lock.lock();
        try {
            if (Long.compareUnsigned(end, readEnd) > 0) {
                readEnd = end;
            }
            if (messages.isEmpty()) {
                if (buffer.isEmpty()) {
                    advanceReadPosition(readEnd);
                }
                return;
            }
            buffer.addAll(messages);
            notEmpty.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void advanceReadPosition(long position) {
        if (Long.compareUnsigned(position, readPosition) > 0) {
            readPosition = position;
        }
    }

    private void fail(Throwable t) {
        lock.lock();
        try {
            if (closed) {
                LOG.debug("The reader of replication slot {} stopped after close: {}", settings.slot(), describe(t));
                return;
            }
            failure = t;
            notEmpty.signalAll();
        } finally {
            lock.unlock();
        }
        LOG.warn("The replication stream of slot {} failed: {}", settings.slot(), describe(t));
    }

    /** The pgoutput protocol (version 1), one message at a time; only the reader thread uses it. */
    private final class Decoder {
        /** The current transaction's messages of ours: their positions and contents. */
        private final List<Long> positions = new ArrayList<>();
        private final List<byte[]> payloads = new ArrayList<>();
        private boolean inTransaction;

        boolean inTransaction() {
            return inTransaction;
        }

        void decode(ByteBuffer data) {
            byte type = data.get();
            switch (type) {
                case 'B' -> {
                    inTransaction = true;
                    positions.clear();
                    payloads.clear();
                }
                case 'M' -> message(data);
                case 'C' -> commit(data);
                default -> {
                    // Relation, type, origin and row change messages of published tables: not ours.
                }
            }
        }

        private void message(ByteBuffer data) {
            byte flags = data.get();
            long lsn = data.getLong();
            boolean ours = prefixMatches(data);
            int length = data.getInt();
            if ((flags & 1) == 0 || !inTransaction || !ours) {
                return;
            }
            byte[] content = new byte[length];
            data.get(content);
            positions.add(lsn);
            payloads.add(content);
        }

        /** Reads the NUL-terminated prefix and says whether it is ours. */
        private boolean prefixMatches(ByteBuffer data) {
            int startAt = data.position();
            int end = startAt;
            while (data.get(end) != 0) {
                end++;
            }
            data.position(end + 1);
            if (end - startAt != prefix.length) {
                return false;
            }
            for (int i = 0; i < prefix.length; i++) {
                if (data.get(startAt + i) != prefix[i]) {
                    return false;
                }
            }
            return true;
        }

        private void commit(ByteBuffer data) {
            data.get(); // flags, unused
            data.getLong(); // the commit record's LSN
            long end = data.getLong();
            Instant commitTime = fromPostgresMicros(data.getLong());
            List<StreamMessage> messages = new ArrayList<>(positions.size());
            for (int i = 0; i < positions.size(); i++) {
                messages.add(new StreamMessage(positions.get(i), end, commitTime, payloads.get(i)));
            }
            positions.clear();
            payloads.clear();
            inTransaction = false;
            boundary(messages, end);
        }
    }

    static Instant fromPostgresMicros(long micros) {
        long epochMicros = micros + PG_EPOCH_MICROS;
        return Instant.ofEpochSecond(Math.floorDiv(epochMicros, 1_000_000L),
                Math.floorMod(epochMicros, 1_000_000L) * 1_000L);
    }

    // ---- connections ----

    /**
     * Fresh replication connections to {@code jdbcUrl}: {@code props} (user, password, SSL...) plus what pgjdbc's
     * replication API needs: {@code replication=database}, {@code assumeMinServerVersion=10} and
     * {@code preferQueryMode=simple}. A failure to connect is thrown as a retriable {@link StoreException} naming
     * the URL (never the password).
     */
    static Supplier<Connection> replicationConnections(String jdbcUrl, Properties props) {
        Objects.requireNonNull(jdbcUrl, "jdbcUrl");
        Properties copy = new Properties();
        if (props != null) {
            copy.putAll(props);
        }
        PGProperty.REPLICATION.set(copy, "database");
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(copy, "10");
        PGProperty.PREFER_QUERY_MODE.set(copy, "simple");
        return () -> {
            try {
                return DriverManager.getConnection(jdbcUrl, copy);
            } catch (SQLException e) {
                throw new StoreException("cannot open a replication connection to " + jdbcUrl + " (SQLSTATE "
                        + e.getSQLState() + "): " + e.getMessage(), e, retriable(e));
            }
        };
    }

    // ---- helpers ----

    static String quoteIdentifier(String name) {
        return '"' + name.replace("\"", "\"\"") + '"';
    }

    static long parseLsn(String lsn) {
        return LogSequenceNumber.valueOf(lsn).asLong();
    }

    static String lsn(long position) {
        return LogSequenceNumber.valueOf(position).asString();
    }

    static boolean retriable(SQLException e) {
        return PostgresDialect.ERRORS.isRetriable(e);
    }

    private static String describe(Throwable t) {
        return t instanceof SQLException e ? e.getMessage() + " (SQLSTATE " + e.getSQLState() + ")" : t.toString();
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException("interrupted while waiting for a replication slot", e, true);
        }
    }

    private static void closeQuietly(Connection connection) {
        try {
            connection.close();
        } catch (SQLException | RuntimeException e) {
            LOG.debug("Closing a replication connection failed: {}", e.toString());
        }
    }
}
