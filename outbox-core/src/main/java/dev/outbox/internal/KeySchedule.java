package dev.outbox.internal;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.Backoff;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.function.DoubleSupplier;

/**
 * The dispatcher's per-key scheduling state as pure logic: which records were read and wait behind their key,
 * which keys may send now, which record of each key is in flight, and when a failed key's head record may be
 * retried. The {@link DefaultDispatcher} keeps only the thread coordination around it.
 *
 * <h2>Invariants</h2>
 * <ul>
 *   <li><b>Barrier</b>: at most one record per key is in flight, and a key's next record is taken only once its
 *       in-flight record was {@linkplain #acknowledged acknowledged}, {@linkplain #parked parked},
 *       {@linkplain #retryLater handed back for a retry} or {@linkplain #unsent never sent}. The dispatcher calls
 *       those only after the store committed the row's purge, park or failure, so a key moves on only once the
 *       table agrees.</li>
 *   <li><b>Order</b>: the records of a key are taken in the order they were {@linkplain #offer offered}, which is
 *       ascending id order within one read; a record handed back for a retry goes back to the head of its key.</li>
 *   <li><b>A failure holds only its key</b>: a failed record waits at the head of its key until its
 *       {@linkplain OutboxRecord#nextAttemptAt() next attempt time} (exponential backoff with jitter, per record,
 *       from its attempt count), with its key's later records behind it; every other key stays
 *       {@linkplain #takeReady takeable}. After {@code maxAttempts} failures, or at once on a permanent one,
 *       {@link #failure} says park, and once parked the key moves on.</li>
 *   <li><b>No record twice</b>: a record already in flight or queued is not queued again, and a record settled
 *       (acknowledged or parked) while a read was under way ({@link #readStarted()} … {@link #readEnded()}) is not
 *       queued by that read: the store may have returned it before it was deleted.</li>
 *   <li><b>Bounded</b>: {@link #takeReady} never puts more than {@code maxInFlight} records in flight;
 *       {@link #room()} says how many more may be read.</li>
 *   <li><b>Bounded in bytes</b>: {@link #room()} is 0 once the {@linkplain #size(OutboxRecord) bytes} of the records
 *       in flight and queued reach {@code maxBytes}, and otherwise no more rows than fit in the free bytes at the
 *       {@linkplain #sizeEstimate() size estimate}: the mean size of the rows of the last read that returned any (one
 *       row while no read has: it teaches the size). Records are counted when read, not when sent, since that is
 *       when they take up memory. A record larger than {@code maxBytes} is still read once nothing else is queued or
 *       in flight, and goes alone. The store cannot know the sizes before it reads, so a read can overshoot the bound
 *       by what its rows exceed the estimate: never when sizes are steady, by at most that one read's rows (at most
 *       {@code maxInFlight}) when they grow suddenly; the next read waits until the bytes fall below the bound.</li>
 * </ul>
 * <b>Held keys</b> ({@code DispatcherConfig.AfterPark.HOLD_KEY}, {@link #holdKeysAfterPark}): once a record is
 * {@linkplain #parked parked} its key is held: the key's queued records are dropped, and nothing of it is queued or
 * sent until the key is released ({@link #parkedKeysRead}). The held keys are the parked table's keys: the
 * dispatcher reads them from the store when it starts leading and every second while it leads; a release is
 * followed by a rewind (the dropped records are read again from the table). Holds survive {@link #abandon()}.
 *
 * <p>{@link #abandon()} forgets every queued record (not those in flight): the dispatcher calls it whenever what it
 * read may no longer be what the table holds for it (a new leader id, a failed read, leadership lost) and reads
 * again from the head of the table. The failure state survives that rewind in the rows themselves (attempts and
 * next attempt time, written by {@code Store.retryLater} before {@link #retryLater} is called).
 *
 * <p>Not thread-safe: single-threaded by contract (the dispatcher calls it only while holding its lock). Time comes
 * from the injected {@link Clock}, jitter from the injected supplier, so tests drive it without threads.
 */
public final class KeySchedule {

    /** A record in flight: sent (or about to be), its outcome not processed yet. Guarded like the schedule. */
    public static final class Flight {
        private final OutboxRecord record;
        private final long sentAtNanos;
        /** Its key's state, whose flight it is until it settles (a key in flight stays in the schedule's map). */
        private final KeyState state;
        private boolean reportedStuck;

        Flight(OutboxRecord record, long sentAtNanos, KeyState state) {
            this.record = record;
            this.sentAtNanos = sentAtNanos;
            this.state = state;
        }

        /** The record in flight. */
        public OutboxRecord record() {
            return record;
        }

        /** When it was taken for sending, by {@link System#nanoTime()} (or the caller's equivalent). */
        public long sentAtNanos() {
            return sentAtNanos;
        }

        /** Whether it was reported as unacknowledged for too long; see {@link #markReportedStuck()}. */
        public boolean reportedStuck() {
            return reportedStuck;
        }

        /** Remembers that the dispatcher reported this flight as stuck, so that it reports it once. */
        public void markReportedStuck() {
            reportedStuck = true;
        }

        @Override
        public String toString() {
            return "Flight{" + record.id() + ", key " + dev.outbox.spi.Excerpt.of(record.key()) + '}';
        }
    }

    /**
     * What to do with a failed delivery.
     *
     * @param park          whether to park the record (too many attempts, or a permanent failure)
     * @param attempts      the record's failed deliveries, this one included
     * @param nextAttemptAt when to try again, null when parking
     * @param outage        the broker was unavailable for every record: the attempt is not counted
     */
    public record Verdict(boolean park, int attempts, Instant nextAttemptAt, boolean outage) {
        /** A verdict on a failure of the record itself. */
        public Verdict(boolean park, int attempts, Instant nextAttemptAt) {
            this(park, attempts, nextAttemptAt, false);
        }
    }

    private static final class KeyState {
        final String key;
        final ArrayDeque<OutboxRecord> queue = new ArrayDeque<>(4);
        Flight flight;
        /** Whether the key is ready: no flight, and its head record may be sent now. */
        boolean ready;
        /** Its entries in {@link #readyQueue}, stale ones included. */
        int readyEntries;

        KeyState(String key) {
            this.key = key;
        }
    }

    private record Due(Instant at, String key, long id) {
    }

    private final int maxInFlight;
    private final long maxBytes;
    private final Duration firstBackoff;
    /** How long a record waits before its next attempt, before jitter. */
    private final Backoff retries;
    private final int maxAttempts;
    private final Clock clock;
    private final DoubleSupplier jitter;

    private final Map<String, KeyState> keys = new HashMap<>();
    /**
     * Keys with no record in flight whose head record may be sent now, in the order they became so: each key that
     * became {@linkplain KeyState#ready ready} is appended, and an entry is stale when its key is not ready any more
     * or has a later entry (it became ready again since: its place is the later one). Stale entries are skipped when
     * taken. A queue with flags rather than a {@code LinkedHashSet}: no hashing, no node per entry.
     */
    private final ArrayDeque<KeyState> readyQueue = new ArrayDeque<>();
    /** Keys {@linkplain KeyState#ready ready}. */
    private int readyKeys;
    /** Keys whose head record waits for its next attempt time; entries go stale and are checked when due. */
    private final PriorityQueue<Due> waiting = new PriorityQueue<>(Comparator.comparing(Due::at));
    private final LongHashSet queuedIds = new LongHashSet();
    private int inFlight;
    /** Bytes of the records in flight and queued ({@link #size}). */
    private long bytes;
    /** Mean record size of the last read that returned rows; 0 until one has. */
    private long sizeEstimate;
    /** Rows and bytes offered since {@link #readStarted()}. */
    private int readRows;
    private long readBytes;
    /** Outage failures since the last acknowledgement: the exponent of the backoff every key shares. */
    private int outageStreak;
    /** When {@link #outageStreak} last grew. */
    private Instant lastOutageStep = Instant.MIN;
    private boolean active;
    private boolean reading;
    private final LongHashSet settledDuringRead = new LongHashSet();
    /** Whether a park holds its key ({@code HOLD_KEY}). */
    private boolean holdAfterPark;
    /** Held keys → the {@link #holdSeq} at which each was held. */
    private final Map<String, Long> held = new HashMap<>();
    private long holdSeq;

    /**
     * A schedule bounded in records only.
     *
     * @param maxInFlight  the most records in flight and queued together
     * @param firstBackoff the wait before the first retry of a record (before jitter)
     * @param maxBackoff   the longest wait before a retry
     * @param maxAttempts  failed deliveries after which a record is parked
     * @param clock        the time of next attempts
     * @param jitter       values in [0, 1); a retry waits between half and all of its backoff
     */
    public KeySchedule(int maxInFlight, Duration firstBackoff, Duration maxBackoff, int maxAttempts, Clock clock,
                       DoubleSupplier jitter) {
        this(maxInFlight, Long.MAX_VALUE, firstBackoff, maxBackoff, maxAttempts, clock, jitter);
    }

    /**
     * @param maxInFlight  the most records in flight and queued together
     * @param maxBytes     the most {@linkplain #size(OutboxRecord) bytes} of records in flight and queued together
     *                     (see the class documentation for how a read may overshoot it); {@link Long#MAX_VALUE} for
     *                     no bound in bytes
     * @param firstBackoff the wait before the first retry of a record (before jitter)
     * @param maxBackoff   the longest wait before a retry
     * @param maxAttempts  failed deliveries after which a record is parked
     * @param clock        the time of next attempts
     * @param jitter       values in [0, 1); a retry waits between half and all of its backoff
     */
    public KeySchedule(int maxInFlight, long maxBytes, Duration firstBackoff, Duration maxBackoff, int maxAttempts,
                       Clock clock, DoubleSupplier jitter) {
        if (maxInFlight < 1 || maxAttempts < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("maxInFlight, maxBytes and maxAttempts must be positive: "
                    + maxInFlight + ", " + maxBytes + ", " + maxAttempts);
        }
        this.maxInFlight = maxInFlight;
        this.maxBytes = maxBytes;
        this.firstBackoff = Objects.requireNonNull(firstBackoff, "firstBackoff");
        this.retries = Backoff.exponential(firstBackoff, Objects.requireNonNull(maxBackoff, "maxBackoff"));
        this.maxAttempts = maxAttempts;
        this.clock = Objects.requireNonNull(clock, "clock");
        this.jitter = Objects.requireNonNull(jitter, "jitter");
    }

    // ------------------------------------------------------------------------------------------ leadership

    /** Starts accepting records (leadership acquired): forgets anything queued before. */
    public void start() {
        abandon();
        held.clear(); // the dispatcher reads them from the store before its first read
        active = true;
    }

    /** Stops accepting records (leadership lost or given up): forgets everything queued and held; flights stay. */
    public void stop() {
        abandon();
        held.clear();
        active = false;
    }

    /** Whether records are accepted: between {@link #start()} and {@link #stop()}. */
    public boolean active() {
        return active;
    }

    /**
     * Forgets every queued record, so that the next read from the head of the table queues them again. Records in
     * flight stay tracked: their outcomes are still processed, and they are not queued again while in flight.
     */
    public void abandon() {
        for (Iterator<Map.Entry<String, KeyState>> it = keys.entrySet().iterator(); it.hasNext(); ) {
            KeyState ks = it.next().getValue();
            for (OutboxRecord r : ks.queue) {
                bytes -= size(r);
            }
            ks.queue.clear();
            ks.ready = false;
            ks.readyEntries = 0;
            if (ks.flight == null) {
                it.remove();
            }
        }
        readyQueue.clear();
        readyKeys = 0;
        waiting.clear();
        queuedIds.clear();
    }

    // ------------------------------------------------------------------------------------------ reading

    /** A read of the table begins: records settled from now until {@link #readEnded()} are not queued by it. */
    public void readStarted() {
        reading = true;
        settledDuringRead.clear();
        readRows = 0;
        readBytes = 0;
    }

    /**
     * The read that {@link #readStarted()} announced ended (queued, failed, or thrown away). If it offered rows, their
     * mean size becomes the {@linkplain #sizeEstimate() size estimate} of the next read.
     */
    public void readEnded() {
        reading = false;
        settledDuringRead.clear();
        if (readRows > 0) {
            sizeEstimate = Math.max(1, (readBytes + readRows - 1) / readRows);
        }
        readRows = 0;
        readBytes = 0;
    }

    /**
     * Queues a record read from the table behind its key.
     *
     * @return whether it was queued: not if the schedule is {@linkplain #active() inactive}, the record is in flight
     *         or queued already, or it was settled while the read was under way
     */
    public boolean offer(OutboxRecord r) {
        long size = size(r);
        readRows++;
        readBytes += size;
        if (!active || queuedIds.contains(r.id()) || settledDuringRead.contains(r.id()) || held.containsKey(r.key())) {
            return false;
        }
        KeyState ks = keys.computeIfAbsent(r.key(), KeyState::new);
        if (ks.flight != null && ks.flight.record.id() == r.id()) {
            return false;
        }
        ks.queue.addLast(r);
        queuedIds.add(r.id());
        bytes += size;
        if (ks.flight == null && ks.queue.size() == 1) {
            headChanged(ks);
        }
        return true;
    }

    // ------------------------------------------------------------------------------------------ sending

    /**
     * Takes the head records that may be sent now, at most {@code max} and no more than the in-flight limit
     * allows, and registers them in flight.
     *
     * @param sentAtNanos the time to record as their send time
     */
    public List<Flight> takeReady(int max, long sentAtNanos) {
        promoteDue();
        int room = Math.min(max, maxInFlight - inFlight);
        if (readyKeys == 0 || room <= 0) {
            return List.of();
        }
        List<Flight> out = new ArrayList<>(Math.min(room, readyKeys));
        KeyState ks;
        while (out.size() < room && (ks = pollReady()) != null) {
            OutboxRecord r = ks.queue.pollFirst();
            queuedIds.remove(r.id());
            Flight f = new Flight(r, sentAtNanos, ks);
            ks.flight = f;
            inFlight++;
            out.add(f);
        }
        return out;
    }

    /** Whether {@link #takeReady} would return something now. */
    public boolean hasReady() {
        promoteDue();
        return readyKeys > 0 && inFlight < maxInFlight;
    }

    /** The earliest next attempt time among keys waiting to retry, or null if none waits. */
    public Instant nextDue() {
        while (!waiting.isEmpty() && !valid(keys.get(waiting.peek().key()), waiting.peek())) {
            waiting.poll();
        }
        return waiting.isEmpty() ? null : waiting.peek().at();
    }

    /**
     * How many more records may be read: the in-flight limit less what is in flight and queued, and no more than fit
     * in the bytes left below {@code maxBytes} at the {@linkplain #sizeEstimate() size estimate} (one while the size
     * is unknown). 0 once those bytes reach {@code maxBytes}; at least 1 when nothing is in flight or queued, so that
     * a record larger than {@code maxBytes} goes alone.
     */
    public int room() {
        int records = maxInFlight - inFlight - queuedIds.size();
        if (maxBytes == Long.MAX_VALUE || records <= 0) {
            return records;
        }
        boolean empty = inFlight == 0 && queuedIds.isEmpty();
        long fit = sizeEstimate == 0 ? 1 : (maxBytes - bytes) / sizeEstimate;
        if (fit <= 0) {
            return empty ? 1 : 0;
        }
        return (int) Math.min(records, fit);
    }

    /**
     * The least {@link #room()} worth a read: {@code batch}, or less when the bound in bytes holds fewer records than
     * two batches at the {@linkplain #sizeEstimate() size estimate} — then half of what it holds (at least one), so
     * that reading overlaps sending without waiting for every record to be acknowledged.
     *
     * @param batch the least room worth a read when records are small (the mark batch size)
     */
    public int readThreshold(int batch) {
        if (maxBytes == Long.MAX_VALUE) {
            return batch;
        }
        long holds = sizeEstimate == 0 ? 1 : maxBytes / sizeEstimate;
        return (int) Math.max(1, Math.min(batch, holds / 2));
    }

    /** Bytes of the records in flight and queued: the sum of their {@link #size sizes}. */
    public long bytes() {
        return bytes;
    }

    /** The mean size of the rows of the last read that returned any; 0 before such a read. */
    public long sizeEstimate() {
        return sizeEstimate;
    }

    /**
     * A record's size as the schedule counts it: the bytes of its value and of its headers' values, plus one byte per
     * character of its key and of its headers' names. Object overheads are not counted: they matter only for tiny
     * records, which {@code maxInFlight} bounds.
     */
    public static long size(OutboxRecord r) {
        OutboxMessage m = r.message();
        long n = m.valueSize() + (long) m.key().length();
        for (Header h : m.headers()) {
            n += h.name().length() + (long) h.valueSize();
        }
        return n;
    }

    /** Records in flight. */
    public int inFlight() {
        return inFlight;
    }

    /** Records queued (read, not in flight). */
    public int queued() {
        return queuedIds.size();
    }

    /** The records in flight, a snapshot. */
    public Collection<Flight> flights() {
        List<Flight> out = new ArrayList<>(inFlight);
        for (KeyState ks : keys.values()) {
            if (ks.flight != null) {
                out.add(ks.flight);
            }
        }
        return Collections.unmodifiableList(out);
    }

    // ------------------------------------------------------------------------------------------ outcomes

    /**
     * The record was delivered and its row deleted: its key moves on. A queued copy of it (read again meanwhile)
     * is dropped.
     */
    public void acknowledged(Flight f) {
        outageStreak = 0;
        settle(f);
    }

    /**
     * The record was parked: its key moves on, as after an acknowledgement, or, {@linkplain #holdKeysAfterPark
     * holding keys after a park}, is held.
     */
    public void parked(Flight f) {
        settle(f);
        if (holdAfterPark) {
            hold(f.record.key());
        }
    }

    /**
     * Whether a park holds its key ({@code DispatcherConfig.AfterPark.HOLD_KEY}) instead of letting it move on. Off
     * by default.
     */
    public void holdKeysAfterPark(boolean value) {
        this.holdAfterPark = value;
    }

    /**
     * Holds {@code key}: drops its queued records, queues none of its records and sends none until it is released.
     * A record of it in flight completes as usual.
     */
    public void hold(String key) {
        held.put(key, ++holdSeq);
        KeyState ks = keys.get(key);
        if (ks != null) {
            headChanged(ks);
        }
    }

    /** Whether {@code key} is held. */
    public boolean isHeld(String key) {
        return held.containsKey(key);
    }

    /** How many keys are held. */
    public int heldKeys() {
        return held.size();
    }

    /**
     * A read of the store's parked keys begins: pass the value returned to {@link #parkedKeysRead}, so that a key held
     * by a park made while the read was under way is not released by it.
     */
    public long parkedKeysReadStarted() {
        return holdSeq;
    }

    /**
     * The store's parked keys, read from a snapshot taken after {@link #parkedKeysReadStarted()} returned
     * {@code started}: holds every key among them, and releases every held key not among them that was held before
     * the read began (one held since may have been parked after the snapshot).
     *
     * @return the released keys: their records were dropped, read them again from the table
     */
    public Set<String> parkedKeysRead(Set<String> parkedKeys, long started) {
        for (String key : parkedKeys) {
            if (!held.containsKey(key)) {
                hold(key);
            }
        }
        Set<String> released = new HashSet<>();
        for (Iterator<Map.Entry<String, Long>> it = held.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Long> e = it.next();
            if (e.getValue() <= started && !parkedKeys.contains(e.getKey())) {
                it.remove();
                released.add(e.getKey());
            }
        }
        return released;
    }

    /**
     * The record was never sent (leadership ended or the lease lapsed first): it leaves flight. Whoever stopped the
     * send also {@linkplain #abandon() abandoned} the queue, so the record is read again from the table.
     */
    public void unsent(Flight f) {
        leaveFlight(f);
    }

    /**
     * What to do with the failed delivery of {@code f}: park it after {@code maxAttempts} failures or on a
     * permanent one, else retry at a time backed off exponentially from its attempt count, with jitter. Changes
     * nothing: apply the verdict with {@link #parked} or {@link #retryLater} once the store recorded it.
     */
    public Verdict failure(Flight f, boolean permanent) {
        int attempts = f.record.attempts() + 1;
        if (permanent || attempts >= maxAttempts) {
            return new Verdict(true, attempts, null);
        }
        return new Verdict(false, attempts, clock.instant().plus(backoff(attempts)));
    }

    /**
     * What to do with a delivery of {@code f} that failed because the broker was unavailable for every record (an
     * outage): retry it at a time backed off exponentially from the failures since the last acknowledgement of any
     * record, with jitter; never park, never count the attempt. Apply it with {@link #heldByOutage}; the next
     * {@linkplain #acknowledged acknowledgement} ends the outage's backoff.
     */
    public Verdict outage(Flight f) {
        Instant now = clock.instant();
        // Many records fail together in an outage: the backoff doubles at most once per first backoff, not per record.
        if (outageStreak == 0 || !now.isBefore(lastOutageStep.plus(firstBackoff))) {
            outageStreak = Math.min(outageStreak + 1, 62);
            lastOutageStep = now;
        }
        return new Verdict(false, f.record.attempts(), now.plus(backoff(outageStreak)), true);
    }

    /** Whether outage failures were seen since the last acknowledgement. */
    public boolean inOutage() {
        return outageStreak > 0;
    }

    /**
     * The record failed by an outage ({@link #outage}): it goes back to the head of its key until
     * {@code nextAttemptAt}, its attempts unchanged; nothing is written to the store.
     */
    public void heldByOutage(Flight f, Instant nextAttemptAt) {
        requeue(f, f.record.retryAt(nextAttemptAt));
    }

    /**
     * The backoff before the retry that follows failure number {@code attempts}: {@code firstBackoff × 2^(attempts-1)},
     * capped at {@code maxBackoff}, of which a random half is taken off ("equal jitter"), so that keys that failed
     * together do not retry together.
     */
    Duration backoff(int attempts) {
        return retries.delay(attempts, jitter.getAsDouble());
    }

    /**
     * The record's failure was recorded in the store with {@code nextAttemptAt}: it goes back to the head of its
     * key, which waits until then while every other key carries on. If the schedule is
     * {@linkplain #active() inactive} the record is only let go: the next leader reads it from the table.
     */
    public void retryLater(Flight f, Instant nextAttemptAt) {
        requeue(f, f.record.failedOnce(nextAttemptAt));
    }

    /** The per-key state, keys in order: what is in flight and what is queued behind it. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("KeySchedule{").append(active ? "active" : "inactive")
                .append(", in flight ").append(inFlight);
        new java.util.TreeMap<>(keys).forEach((key, ks) -> {
            sb.append(", ").append(key).append(':');
            if (ks.flight != null) {
                sb.append('>').append(ks.flight.record.id());
            }
            for (OutboxRecord r : ks.queue) {
                sb.append(' ').append(r.id()).append('a').append(r.attempts());
            }
        });
        if (!held.isEmpty()) {
            sb.append(", held ").append(new java.util.TreeSet<>(held.keySet()));
        }
        return sb.append('}').toString();
    }

    /** {@link PlantedBug#RETRY_OVERTAKES_HEAD}: the simulation's planted bug; false otherwise. */
    boolean retryAtTail;

    private void requeue(Flight f, OutboxRecord r) {
        KeyState ks = leaveFlight(f);
        if (!active || ks == null) {
            return;
        }
        if (queuedIds.remove(r.id())) {
            ks.queue.removeIf(q -> q.id() == r.id());
            bytes -= size(r);
        }
        if (retryAtTail) {
            ks.queue.addLast(r); // PlantedBug.RETRY_OVERTAKES_HEAD
        } else {
            ks.queue.addFirst(r);
        }
        queuedIds.add(r.id());
        bytes += size(r);
        keys.put(r.key(), ks);
        headChanged(ks);
    }

    // ------------------------------------------------------------------------------------------ internals

    private void settle(Flight f) {
        if (reading) {
            settledDuringRead.add(f.record.id());
        }
        KeyState ks = leaveFlight(f);
        if (ks == null) {
            return;
        }
        OutboxRecord head = ks.queue.peekFirst();
        if (head != null && head.id() == f.record.id()) {
            ks.queue.pollFirst(); // its copy, read again meanwhile: delivered already
            queuedIds.remove(head.id());
            bytes -= size(head);
            headChanged(ks);
        }
    }

    /** Takes {@code f} out of flight; the key's state if {@code f} was its flight, else null. */
    private KeyState leaveFlight(Flight f) {
        KeyState ks = f.state;
        if (ks.flight != f) {
            return null;
        }
        ks.flight = null;
        inFlight--;
        bytes -= size(f.record);
        headChanged(ks);
        return ks;
    }

    /** The key's head (or flight) changed: files it as ready or waiting, or drops an empty key. */
    private void headChanged(KeyState ks) {
        String key = ks.key;
        if (ks.ready) {
            ks.ready = false; // its entry in the ready queue goes stale
            readyKeys--;
        }
        if (!held.isEmpty() && held.containsKey(key)) {
            for (OutboxRecord r : ks.queue) { // a held key keeps nothing queued: read again on release
                bytes -= size(r);
                queuedIds.remove(r.id());
            }
            ks.queue.clear();
        }
        if (ks.flight != null) {
            return;
        }
        OutboxRecord head = ks.queue.peekFirst();
        if (head == null) {
            keys.remove(key);
            return;
        }
        Instant at = head.nextAttemptAt();
        if (at == null || !at.isAfter(clock.instant())) {
            markReady(ks);
        } else {
            waiting.add(new Due(at, key, head.id()));
        }
    }

    private void promoteDue() {
        if (waiting.isEmpty()) {
            return;
        }
        Instant now = clock.instant();
        while (!waiting.isEmpty() && !waiting.peek().at().isAfter(now)) {
            Due d = waiting.poll();
            KeyState ks = keys.get(d.key());
            if (valid(ks, d)) {
                markReady(ks);
            }
        }
    }

    private void markReady(KeyState ks) {
        if (!ks.ready) {
            ks.ready = true;
            readyKeys++;
            ks.readyEntries++;
            readyQueue.addLast(ks);
        }
    }

    /** Takes the key that became ready first and is still ready (skipping stale entries), or null if none is. */
    private KeyState pollReady() {
        KeyState ks;
        while ((ks = readyQueue.pollFirst()) != null) {
            ks.readyEntries--;
            if (ks.ready && ks.readyEntries == 0) {
                ks.ready = false;
                readyKeys--;
                return ks;
            }
        }
        return null;
    }

    /** Whether a waiting entry still describes its key's state {@code ks}: no flight, and the same head record. */
    private static boolean valid(KeyState ks, Due d) {
        if (ks == null || ks.flight != null) {
            return false;
        }
        OutboxRecord head = ks.queue.peekFirst();
        return head != null && head.id() == d.id() && d.at().equals(head.nextAttemptAt());
    }
}
