package dev.outbox.testkit;

import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link MessageBroker} held in memory that can misbehave on purpose, for tests of the dispatcher.
 *
 * <ul>
 *   <li>It keeps a log of the records it accepted, in the order it accepted them; {@link #delivered()} reads
 *       it. A record enters the log when its send is acknowledged successfully (or, for a
 *       {@link Outcome#LOST_ACK lost acknowledgement}, when it is accepted but reported failed), always before
 *       the send's stage completes.</li>
 *   <li>Completions arrive on the broker's own thread ({@code outbox-inmemory-broker-N}), after the delay the
 *       {@link BrokerFaults} plan chose, so acknowledgements of different records may come back out of order.
 *       </li>
 *   <li>A record larger than {@link Builder#maxRecordSize} fails permanently at once, like Kafka's
 *       {@code RecordTooLargeException}.</li>
 *   <li>{@link #close(Duration)} flushes for at most the timeout, then fails whatever is still pending
 *       (hung records included) and stops its thread; afterwards nothing is appended to the log, and a send
 *       returns a failed stage.</li>
 * </ul>
 *
 * <p>Thread-safe.
 */
public final class InMemoryBroker implements MessageBroker {
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final Object lock = new Object();
    private final int maxRecordSize;
    private final Duration deliveryTimeout;
    private final ScheduledExecutorService scheduler;
    private final Thread[] schedulerThread = new Thread[1];
    private volatile BrokerFaults faults;

    /** Guarded by {@link #lock}. */
    private final List<OutboxRecord> log = new ArrayList<>();
    private final Set<Pending> pending = new LinkedHashSet<>();
    private final Set<Pending> hung = new LinkedHashSet<>();
    private final List<Runnable> held = new ArrayList<>();
    private boolean paused;
    private boolean closing;
    private boolean terminated;

    private final CountDownLatch closed = new CountDownLatch(1);
    private final AtomicLong sends = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();

    /** A broker that acknowledges every record, with the default maximum record size and no faults. */
    public InMemoryBroker() {
        this(builder());
    }

    private InMemoryBroker(Builder builder) {
        this.maxRecordSize = builder.maxRecordSize;
        this.deliveryTimeout = builder.deliveryTimeout;
        this.faults = builder.faults;
        String name = "outbox-inmemory-broker-" + INSTANCES.incrementAndGet();
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread t = new Thread(runnable, name);
            t.setDaemon(true);
            synchronized (schedulerThread) {
                schedulerThread[0] = t;
            }
            return t;
        });
        executor.setRemoveOnCancelPolicy(true);
        this.scheduler = executor;
    }

    /**
     * Starts a builder; not thread-safe.
     *
     * @return a new builder with the defaults: 1 MiB records, no delivery timeout, no faults
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Replaces the fault plan; {@link BrokerFaults#none()} heals the broker. Applies to later sends.
     *
     * @param faults the plan, asked once per send that gets past the size check; not {@code null}. Sends already
     *               decided (pending or hung) keep their outcome.
     * @throws NullPointerException if {@code faults} is {@code null}
     */
    public void setFaults(BrokerFaults faults) {
        this.faults = Objects.requireNonNull(faults, "faults");
    }

    // ---- the port -------------------------------------------------------------------------------------------

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        if (record == null) {
            throw new IllegalArgumentException("record must not be null");
        }
        sends.incrementAndGet();
        synchronized (lock) {
            if (closing) {
                failures.incrementAndGet();
                return CompletableFuture.failedFuture(DeliveryException.retriable(
                        "broker is closed: record " + record.id() + " not sent", null));
            }
        }
        int size = sizeOf(record);
        if (size > maxRecordSize) {
            failures.incrementAndGet();
            return CompletableFuture.failedFuture(DeliveryException.permanent("record " + record.id() + " is "
                    + size + " bytes, larger than the maximum of " + maxRecordSize, null));
        }
        Fault fault = faults.decide(record);
        if (fault == null) {
            throw new IllegalStateException("fault plan " + faults + " returned null for record " + record.id());
        }
        if (fault.outcome() == Outcome.THROW) {
            failures.incrementAndGet();
            throw DeliveryException.retriable("injected fault: send of record " + record.id() + " threw", null);
        }
        Pending p = new Pending(record);
        synchronized (lock) {
            if (closing) {
                failures.incrementAndGet();
                return CompletableFuture.failedFuture(DeliveryException.retriable(
                        "broker is closed: record " + record.id() + " not sent", null));
            }
            pending.add(p);
            if (fault.outcome() == Outcome.HANG) {
                hung.add(p);
                if (deliveryTimeout != null) {
                    schedule(() -> complete(p, Outcome.FAIL_RETRIABLE, "delivery timeout of " + deliveryTimeout
                            + " expired"), deliveryTimeout.toNanos());
                }
            } else {
                schedule(() -> completeOrHold(p, fault.outcome()), fault.delay().toNanos());
            }
        }
        return p.future;
    }

    @Override
    public boolean flush(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        CompletableFuture<?>[] snapshot;
        synchronized (lock) {
            snapshot = pending.stream().map(p -> p.future).toArray(CompletableFuture[]::new);
        }
        if (snapshot.length == 0) {
            return true;
        }
        try {
            CompletableFuture.allOf(snapshot).handle((v, e) -> null).get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException e) {
            throw new IllegalStateException("unreachable: handle() swallows failures", e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>A second call returns once the first has finished (or after {@code timeout}).
     */
    @Override
    public void close(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        boolean first;
        synchronized (lock) {
            first = !closing;
            closing = true;
        }
        if (!first) {
            if (!onSchedulerThread()) {
                awaitQuietly(closed, timeout);
            }
            return;
        }
        try {
            flush(timeout);
            List<Pending> left;
            synchronized (lock) {
                terminated = true;
                left = new ArrayList<>();
                for (Pending p : pending) {
                    // an entry already done is being completed by the thread that decided it
                    if (!p.done) {
                        p.done = true;
                        left.add(p);
                    }
                }
                pending.clear();
                hung.clear();
                held.clear();
            }
            for (Pending p : left) {
                failures.incrementAndGet();
                p.future.completeExceptionally(DeliveryException.retriable("broker closed before record "
                        + p.record.id() + " was acknowledged", null));
            }
            scheduler.shutdownNow();
            if (!onSchedulerThread()) {
                try {
                    // the executor reports termination just before its worker thread ends: join it too, so
                    // that no thread of this broker is alive when close returns
                    Thread worker;
                    synchronized (schedulerThread) {
                        worker = schedulerThread[0];
                    }
                    boolean stopped = scheduler.awaitTermination(10, TimeUnit.SECONDS);
                    if (worker != null) {
                        worker.join(TimeUnit.SECONDS.toMillis(10));
                        stopped &= !worker.isAlive();
                    }
                    if (!stopped) {
                        throw new IllegalStateException("the broker's thread did not stop within 10 s");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        } finally {
            closed.countDown();
        }
    }

    // ---- fault control and inspection -------------------------------------------------------------------------

    /**
     * Acknowledges every hung send successfully (appending it to the log).
     *
     * @return how many were released
     */
    public int releaseHung() {
        return completeHung(Outcome.ACK, "released");
    }

    /**
     * Fails every hung send retriably.
     *
     * @return how many were failed
     */
    public int failHung() {
        return completeHung(Outcome.FAIL_RETRIABLE, "hung send failed by the test");
    }

    /**
     * Holds back every outcome that comes due from now on (acknowledgements and failures alike), as if the
     * network to the broker stalled: sends stay pending until {@link #resumeAcks()}. Lets a test attach
     * callbacks or act while records are known to be in flight.
     */
    public void pauseAcks() {
        synchronized (lock) {
            paused = true;
        }
    }

    /**
     * Applies the held outcomes, on the broker's thread in the order they came due, and stops holding them.
     *
     * @return how many outcomes were held
     */
    public int resumeAcks() {
        List<Runnable> release;
        synchronized (lock) {
            paused = false;
            release = new ArrayList<>(held);
            held.clear();
            if (!release.isEmpty() && !terminated) {
                scheduler.execute(() -> release.forEach(Runnable::run));
            }
        }
        return release.size();
    }

    /**
     * Every accepted record, in the order the broker accepted it. A snapshot.
     *
     * @return an immutable copy of the log, duplicates (a retry after a lost acknowledgement) included
     */
    public List<OutboxRecord> delivered() {
        synchronized (lock) {
            return List.copyOf(log);
        }
    }

    /**
     * The accepted records of {@code topic}, in the order the broker accepted them. A snapshot.
     *
     * @param topic the topic; not {@code null}
     * @return a new list of that topic's records from the log, empty if none
     */
    public List<OutboxRecord> delivered(String topic) {
        synchronized (lock) {
            List<OutboxRecord> result = new ArrayList<>();
            for (OutboxRecord r : log) {
                if (r.topic().equals(topic)) {
                    result.add(r);
                }
            }
            return result;
        }
    }

    /**
     * The number of records accepted so far.
     *
     * @return the size of the log, duplicates included
     */
    public int deliveredCount() {
        synchronized (lock) {
            return log.size();
        }
    }

    /**
     * Waits until at least {@code count} records were accepted; returns whether that happened in time.
     *
     * @param count   the log size to wait for (duplicates count)
     * @param timeout how long to wait, polling as {@link Await#until} does
     * @return whether the log held at least {@code count} records before the timeout
     */
    public boolean awaitDelivered(int count, Duration timeout) {
        return Await.until(() -> deliveredCount() >= count, timeout);
    }

    /**
     * The number of calls of {@link #send}, whatever became of them.
     *
     * @return the calls so far with a non-null record, including those that threw or failed at once
     */
    public long sendCount() {
        return sends.get();
    }

    /**
     * The number of sends that failed (thrown, completed exceptionally, or failed by close).
     *
     * @return the failures so far, lost acknowledgements included
     */
    public long failureCount() {
        return failures.get();
    }

    /**
     * The number of sends not yet completed, hung ones included.
     *
     * @return the sends whose stage has not completed yet
     */
    public int pendingCount() {
        synchronized (lock) {
            return pending.size();
        }
    }

    /**
     * The number of outcomes held back by {@link #pauseAcks()} so far.
     *
     * @return the outcomes waiting for {@link #resumeAcks()}; 0 when not paused
     */
    public int heldCount() {
        synchronized (lock) {
            return held.size();
        }
    }

    /**
     * The number of hung sends.
     *
     * @return the sends with {@link Outcome#HANG} not yet released, failed, timed out or closed
     */
    public int hungCount() {
        synchronized (lock) {
            return hung.size();
        }
    }

    /**
     * Whether {@link #close} was called.
     *
     * @return {@code true} from the start of the first close on, even while it still flushes
     */
    public boolean isClosed() {
        synchronized (lock) {
            return closing;
        }
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "InMemoryBroker{delivered=" + log.size() + ", pending=" + pending.size() + ", hung="
                    + hung.size() + ", closed=" + closing + ", faults=" + faults + '}';
        }
    }

    // ---- internals ------------------------------------------------------------------------------------------

    private void schedule(Runnable task, long delayNanos) {
        if (delayNanos <= 0) {
            scheduler.execute(task);
        } else {
            scheduler.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        }
    }

    private int completeHung(Outcome outcome, String why) {
        List<Pending> snapshot;
        synchronized (lock) {
            snapshot = new ArrayList<>(hung);
        }
        int n = 0;
        for (Pending p : snapshot) {
            if (complete(p, outcome, why)) {
                n++;
            }
        }
        return n;
    }

    private void completeOrHold(Pending p, Outcome outcome) {
        synchronized (lock) {
            if (paused) {
                held.add(() -> complete(p, outcome, "injected fault"));
                return;
            }
        }
        complete(p, outcome, "injected fault");
    }

    /** Applies {@code outcome} to {@code p} unless it is already done; returns whether it did. */
    private boolean complete(Pending p, Outcome outcome, String why) {
        synchronized (lock) {
            if (p.done || terminated) {
                return false;
            }
            p.done = true;
            hung.remove(p);
            if (outcome == Outcome.ACK || outcome == Outcome.LOST_ACK) {
                log.add(p.record);
            }
        }
        long id = p.record.id();
        switch (outcome) {
            case ACK -> p.future.complete(null);
            case LOST_ACK -> fail(p, DeliveryException.retriable("injected fault: record " + id
                    + " was accepted but its acknowledgement was lost", null));
            case FAIL_PERMANENT -> fail(p, DeliveryException.permanent("injected fault: record " + id
                    + " can never be accepted", null));
            case FAIL_OUTAGE -> fail(p, DeliveryException.outage("injected fault: the broker is unavailable; record "
                    + id + " not accepted", null));
            default -> fail(p, DeliveryException.retriable(why + ": record " + id + " not accepted", null));
        }
        synchronized (lock) {
            // only now, so that flush() waits for a stage whose outcome is being applied
            pending.remove(p);
        }
        return true;
    }

    private void fail(Pending p, DeliveryException e) {
        failures.incrementAndGet();
        p.future.completeExceptionally(e);
    }

    private boolean onSchedulerThread() {
        synchronized (schedulerThread) {
            return Thread.currentThread() == schedulerThread[0];
        }
    }

    private static void awaitQuietly(CountDownLatch latch, Duration timeout) {
        try {
            latch.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static int sizeOf(OutboxRecord record) {
        long size = record.key().getBytes(StandardCharsets.UTF_8).length + (long) record.message().valueSize();
        for (Header h : record.message().headers()) {
            byte[] v = h.value();
            size += h.name().getBytes(StandardCharsets.UTF_8).length + (v == null ? 0 : v.length);
        }
        return (int) Math.min(Integer.MAX_VALUE, size);
    }

    private static final class Pending {
        final OutboxRecord record;
        final CompletableFuture<Void> future = new CompletableFuture<>();
        /** Guarded by the broker's lock. */
        boolean done;

        Pending(OutboxRecord record) {
            this.record = record;
        }
    }

    /** Configures an {@link InMemoryBroker}; not thread-safe. */
    public static final class Builder {
        private int maxRecordSize = 1024 * 1024;
        private Duration deliveryTimeout;
        private BrokerFaults faults = BrokerFaults.none();

        private Builder() {
        }

        /**
         * The largest record (key, value, header names and values, in bytes) the broker accepts; larger
         * records fail permanently. Default 1 MiB, Kafka's default {@code max.request.size}.
         *
         * @param bytes the largest size, at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes} is less than 1
         */
        public Builder maxRecordSize(int bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("maxRecordSize must be at least 1 byte: " + bytes);
            }
            this.maxRecordSize = bytes;
            return this;
        }

        /**
         * How long a {@link Outcome#HANG hung} send waits before it fails retriably, like Kafka's
         * {@code delivery.timeout.ms}. Default none: hung sends wait for the test or for {@code close}.
         *
         * @param timeout the time from the send, positive
         * @return this builder
         * @throws NullPointerException     if {@code timeout} is {@code null}
         * @throws IllegalArgumentException if {@code timeout} is zero or negative
         */
        public Builder deliveryTimeout(Duration timeout) {
            Objects.requireNonNull(timeout, "deliveryTimeout");
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("deliveryTimeout must be positive: " + timeout);
            }
            this.deliveryTimeout = timeout;
            return this;
        }

        /**
         * The initial fault plan. Default {@link BrokerFaults#none()}.
         *
         * @param faults the plan; not {@code null}. It can be replaced later with {@link InMemoryBroker#setFaults}.
         * @return this builder
         * @throws NullPointerException if {@code faults} is {@code null}
         */
        public Builder faults(BrokerFaults faults) {
            this.faults = Objects.requireNonNull(faults, "faults");
            return this;
        }

        /**
         * Builds the broker. Its completion thread is a daemon, started by the first send.
         *
         * @return a new open broker; {@code close} it to fail what is pending and stop its thread
         */
        public InMemoryBroker build() {
            return new InMemoryBroker(this);
        }
    }
}
