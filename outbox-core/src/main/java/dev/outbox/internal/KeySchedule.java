package dev.outbox.internal;

import dev.outbox.OutboxRecord;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.DoubleSupplier;

/**
 * The dispatcher's per-key scheduling state as pure logic: which records were read and wait behind their key,
 * which keys may send now, which record of each key is in flight, and when a failed key's head record may be
 * retried; the {@link EngineState} guards it.
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
 *   <li><b>Bounded in bytes</b>: {@link #room()} is 0 once the bytes of the records in flight and queued reach
 *       {@code maxBytes}, and otherwise no more rows than fit at the size the last read taught; a record larger than
 *       the bound goes alone (see {@link ByteBudget} for how far a read may overshoot).</li>
 * </ul>
 * <b>Held keys</b> ({@code DispatcherConfig.AfterPark.HOLD_KEY}, {@link #holdKeysAfterPark}): once a record is
 * {@linkplain #parked parked} its key is held — its queued records dropped, nothing of it queued or sent — until it
 * is released ({@link #parkedKeysRead}, see {@link HeldKeys}); a release is followed by a rewind. Holds survive
 * {@link #abandon()}.
 *
 * <p>{@link #abandon()} forgets every queued record (not those in flight): the dispatcher calls it whenever what it
 * read may no longer be what the table holds for it (a new leader id, a failed read, leadership lost) and reads
 * again from the head of the table. The failure state survives that rewind in the rows themselves (attempts and
 * next attempt time, written by {@code Store.retryLater} before {@link #retryLater} is called).
 *
 * <p>Not thread-safe: called only under the engine's lock. Time and jitter are injected: tests drive it without
 * threads.
 */
public final class KeySchedule {

    /** One key's state: its queue, its flight, whether it is ready. Guarded like the schedule. */
    static final class KeyState {
        final String key;
        final ArrayDeque<OutboxRecord> queue = new ArrayDeque<>(4);
        Flight flight;
        /** Whether the key is ready: no flight, and its head record may be sent now. */
        boolean ready;
        /** Its entries in the {@link ReadyKeys} queue, stale ones included. */
        int readyEntries;

        KeyState(String key) {
            this.key = key;
        }
    }

    private final int maxInFlight;
    private final ByteBudget budget;
    private final RetryVerdicts verdicts;

    private final Map<String, KeyState> keys = new HashMap<>();
    private final ReadyKeys ready;
    private final LongHashSet queuedIds = new LongHashSet();
    private int inFlight;
    private boolean active;
    private boolean reading;
    private final LongHashSet settledDuringRead = new LongHashSet();
    /** Whether a park holds its key ({@code HOLD_KEY}). */
    private boolean holdAfterPark;
    private final HeldKeys held = new HeldKeys();

    /** A schedule bounded in records only; see the other constructor. */
    public KeySchedule(int maxInFlight, Duration firstBackoff, Duration maxBackoff, int maxAttempts, Clock clock,
                       DoubleSupplier jitter) {
        this(maxInFlight, Long.MAX_VALUE, firstBackoff, maxBackoff, maxAttempts, clock, jitter);
    }

    /**
     * A schedule of at most {@code maxInFlight} records and {@code maxBytes} bytes ({@link Long#MAX_VALUE}: no bound
     * in bytes) in flight and queued together, parking a record after {@code maxAttempts} failed deliveries and
     * retrying it after a backoff from {@code firstBackoff} up to {@code maxBackoff}, of which {@code jitter} (values
     * in [0, 1)) takes off up to half; {@code clock} gives the times of next attempts.
     */
    public KeySchedule(int maxInFlight, long maxBytes, Duration firstBackoff, Duration maxBackoff, int maxAttempts,
                       Clock clock, DoubleSupplier jitter) {
        if (maxInFlight < 1 || maxAttempts < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("maxInFlight, maxBytes and maxAttempts must be positive: "
                    + maxInFlight + ", " + maxBytes + ", " + maxAttempts);
        }
        this.maxInFlight = maxInFlight;
        this.budget = new ByteBudget(maxBytes);
        this.ready = new ReadyKeys(Objects.requireNonNull(clock, "clock"));
        this.verdicts = new RetryVerdicts(firstBackoff, maxBackoff, maxAttempts, clock, jitter);
    }

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

    /**
     * Forgets every queued record, so that the next read from the head of the table queues them again. Records in
     * flight stay tracked: their outcomes are still processed, and they are not queued again while in flight.
     */
    public void abandon() {
        for (Iterator<Map.Entry<String, KeyState>> it = keys.entrySet().iterator(); it.hasNext(); ) {
            KeyState ks = it.next().getValue();
            for (OutboxRecord r : ks.queue) {
                budget.remove(r);
            }
            ks.queue.clear();
            ks.ready = false;
            ks.readyEntries = 0;
            if (ks.flight == null) {
                it.remove();
            }
        }
        ready.clear();
        queuedIds.clear();
    }

    // ------------------------------------------------------------------------------------------ reading

    /** A read of the table begins: records settled from now until {@link #readEnded()} are not queued by it. */
    public void readStarted() {
        reading = true;
        settledDuringRead.clear();
        budget.readStarted();
    }

    /**
     * The read that {@link #readStarted()} announced ended (queued, failed, or thrown away). If it offered rows, their
     * mean size becomes the {@linkplain #sizeEstimate() size estimate} of the next read.
     */
    public void readEnded() {
        reading = false;
        settledDuringRead.clear();
        budget.readEnded();
    }

    /**
     * Queues a record read from the table behind its key.
     *
     * @return whether it was queued: not if the schedule is stopped, the record is in flight or queued already, or
     *         it was settled while the read was under way
     */
    public boolean offer(OutboxRecord r) {
        long size = size(r);
        budget.offered(size);
        if (!active || queuedIds.contains(r.id()) || settledDuringRead.contains(r.id()) || held.contains(r.key())) {
            return false;
        }
        KeyState ks = keys.computeIfAbsent(r.key(), KeyState::new);
        if (ks.flight != null && ks.flight.record().id() == r.id()) {
            return false;
        }
        ks.queue.addLast(r);
        queuedIds.add(r.id());
        budget.add(r);
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
        ready.promoteDue(keys::get);
        int room = Math.min(max, maxInFlight - inFlight);
        if (ready.count() == 0 || room <= 0) {
            return List.of();
        }
        List<Flight> out = new ArrayList<>(Math.min(room, ready.count()));
        KeyState ks;
        while (out.size() < room && (ks = ready.poll()) != null) {
            OutboxRecord r = ks.queue.pollFirst();
            queuedIds.remove(r.id());
            Flight f = new Flight(r, sentAtNanos, ks, ks.queue.isEmpty() ? 0 : Flight.newerOfTopic(r, ks.queue));
            ks.flight = f;
            inFlight++;
            out.add(f);
        }
        return out;
    }

    /** Whether {@link #takeReady} would return something now. */
    public boolean hasReady() {
        ready.promoteDue(keys::get);
        return ready.count() > 0 && inFlight < maxInFlight;
    }

    /** The earliest next attempt time among keys waiting to retry, or null if none waits. */
    public Instant nextDue() {
        return ready.nextDue(keys::get);
    }

    /**
     * How many more records may be read: the in-flight limit less what is in flight and queued, and no more than
     * the {@link ByteBudget} lets in.
     */
    public int room() {
        return budget.room(maxInFlight - inFlight - queuedIds.size(), inFlight == 0 && queuedIds.isEmpty());
    }

    /** The least {@link #room()} worth a read ({@link ByteBudget#readThreshold}); {@code batch}: the mark batch. */
    public int readThreshold(int batch) {
        return budget.readThreshold(batch);
    }

    /** Bytes of the records in flight and queued: the sum of their {@link #size sizes}. */
    public long bytes() {
        return budget.bytes();
    }

    /** The mean size of the rows of the last read that returned any; 0 before such a read. */
    public long sizeEstimate() {
        return budget.sizeEstimate();
    }

    /** A record's size as the schedule counts it ({@link ByteBudget#size}). */
    public static long size(OutboxRecord r) {
        return ByteBudget.size(r);
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
        verdicts.acknowledged();
        settle(f);
    }

    /**
     * The record was parked: its key moves on, as after an acknowledgement, or, {@linkplain #holdKeysAfterPark
     * holding keys after a park}, is held.
     */
    public void parked(Flight f) {
        settle(f);
        if (holdAfterPark) {
            hold(f.record().key());
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
        held.hold(key);
        KeyState ks = keys.get(key);
        if (ks != null) {
            headChanged(ks);
        }
    }

    /** Whether {@code key} is held. */
    public boolean isHeld(String key) {
        return held.contains(key);
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
        return held.readStarted();
    }

    /**
     * The store's parked keys, read from a snapshot taken after {@link #parkedKeysReadStarted()} returned
     * {@code started}: holds every key among them, and releases every held key not among them that was held before
     * the read began (one held since may have been parked after the snapshot).
     *
     * @return the released keys: their records were dropped, read them again from the table
     */
    public Set<String> parkedKeysRead(Set<String> parkedKeys, long started) {
        Set<String> toHold = new HashSet<>();
        Set<String> released = held.read(parkedKeys, started, toHold);
        toHold.forEach(this::hold);
        return released;
    }

    /**
     * The record was never sent (leadership ended or the lease lapsed first): it leaves flight. Whoever stopped the
     * send also {@linkplain #abandon() abandoned} the queue, so the record is read again from the table.
     */
    public void unsent(Flight f) {
        leaveFlight(f);
    }

    /** The verdict on a failed delivery of {@code f} ({@link RetryVerdicts#failure}); apply it once stored. */
    public Verdict failure(Flight f, boolean permanent) {
        return verdicts.failure(f.record(), permanent);
    }

    /** The verdict on a delivery of {@code f} failed in an outage ({@link RetryVerdicts#outage}). */
    public Verdict outage(Flight f) {
        return verdicts.outage(f.record());
    }

    /** Whether outage failures were seen since the last acknowledgement. */
    public boolean inOutage() {
        return verdicts.inOutage();
    }

    /**
     * The record failed by an outage ({@link #outage}): it goes back to the head of its key until
     * {@code nextAttemptAt}, its attempts unchanged; nothing is written to the store.
     */
    public void heldByOutage(Flight f, Instant nextAttemptAt) {
        requeue(f, f.record().retryAt(nextAttemptAt));
    }

    /** The backoff after failure number {@code attempts} ({@link RetryVerdicts#backoff}). */
    Duration backoff(int attempts) {
        return verdicts.backoff(attempts);
    }

    /**
     * The record's failure was recorded in the store with {@code nextAttemptAt}: it goes back to the head of its
     * key, which waits until then while every other key carries on. If the schedule is stopped the record is only
     * let go: the next leader reads it from the table.
     */
    public void retryLater(Flight f, Instant nextAttemptAt) {
        requeue(f, f.record().failedOnce(nextAttemptAt));
    }

    /** The per-key state, keys in order: what is in flight and what is queued behind it. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("KeySchedule{").append(active ? "active" : "inactive")
                .append(", in flight ").append(inFlight);
        new java.util.TreeMap<>(keys).forEach((key, ks) -> {
            sb.append(", ").append(key).append(':');
            if (ks.flight != null) {
                sb.append('>').append(ks.flight.record().id());
            }
            for (OutboxRecord r : ks.queue) {
                sb.append(' ').append(r.id()).append('a').append(r.attempts());
            }
        });
        if (!held.isEmpty()) {
            sb.append(", held ").append(held.sorted());
        }
        return sb.append('}').toString();
    }

    /** Where a failed record goes back in its key's queue: the protocol's order (its head). */
    ProtocolOrder order = ProtocolOrder.STANDARD;

    private void requeue(Flight f, OutboxRecord r) {
        KeyState ks = leaveFlight(f);
        if (!active || ks == null) {
            return;
        }
        if (queuedIds.remove(r.id())) {
            ks.queue.removeIf(q -> q.id() == r.id());
            budget.remove(r);
        }
        order.requeue(ks.queue, r);
        queuedIds.add(r.id());
        budget.add(r);
        keys.put(r.key(), ks);
        headChanged(ks);
    }

    // ------------------------------------------------------------------------------------------ internals

    private void settle(Flight f) {
        if (reading) {
            settledDuringRead.add(f.record().id());
        }
        KeyState ks = leaveFlight(f);
        if (ks == null) {
            return;
        }
        OutboxRecord head = ks.queue.peekFirst();
        if (head != null && head.id() == f.record().id()) {
            ks.queue.pollFirst(); // its copy, read again meanwhile: delivered already
            queuedIds.remove(head.id());
            budget.remove(head);
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
        budget.remove(f.record());
        headChanged(ks);
        return ks;
    }

    /** The key's head (or flight) changed: files it as ready or waiting, or drops an empty key. */
    private void headChanged(KeyState ks) {
        String key = ks.key;
        ready.unready(ks); // its entry in the ready queue goes stale
        if (held.contains(key)) {
            for (OutboxRecord r : ks.queue) { // a held key keeps nothing queued: read again on release
                budget.remove(r);
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
        ready.file(ks, head);
    }
}
