package dev.outbox.benchmarks;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link MessageBroker} that passes everything to the real one and notes the time of the first send and of
 * every acknowledgement, so that a rate can be taken from the first send to the last ack. Thread-safe.
 */
final class TimingBroker implements MessageBroker {
    /** Called on the producer's thread for every acknowledged record, with {@link System#nanoTime()}. */
    interface AckListener {
        void acknowledged(OutboxRecord record, long nanos);

        /** Called on the dispatcher's thread as {@code record} is handed to the real broker. */
        default void sent(OutboxRecord record, long nanos) {
        }
    }

    private final MessageBroker delegate;
    private final AckListener ackListener;
    private final AtomicLong firstSend = new AtomicLong();
    private final AtomicLong firstAck = new AtomicLong();
    private final AtomicLong lastAck = new AtomicLong();
    private final AtomicLong acks = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong settledUnsent = new AtomicLong();
    private final java.util.concurrent.atomic.LongAdder sendNanos = new java.util.concurrent.atomic.LongAdder();
    private final long target;
    private final boolean sendPending;
    private final CountDownLatch reached = new CountDownLatch(1);

    /**
     * @param target acknowledgements after which {@link #awaitAcks} returns; 0 for none
     */
    TimingBroker(MessageBroker delegate, long target, AckListener ackListener) {
        this(delegate, target, ackListener, true);
    }

    /**
     * @param sendPending whether {@link #sendPending()} reaches the broker; false keeps the producer lingering as it
     *                    did before the dispatcher asked it not to (the polling baseline)
     */
    TimingBroker(MessageBroker delegate, long target, AckListener ackListener, boolean sendPending) {
        this.delegate = delegate;
        this.target = target;
        this.ackListener = ackListener;
        this.sendPending = sendPending;
    }

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        long started = System.nanoTime();
        firstSend.compareAndSet(0, started);
        if (ackListener != null) {
            ackListener.sent(record, started);
        }
        CompletionStage<Void> stage = delegate.send(record);
        sendNanos.add(System.nanoTime() - started);
        stage.whenComplete((ok, error) -> {
            if (error != null) {
                failures.incrementAndGet();
                return;
            }
            long now = System.nanoTime();
            firstAck.compareAndSet(0, now);
            lastAck.accumulateAndGet(now, Math::max);
            if (ackListener != null) {
                ackListener.acknowledged(record, now);
            }
            if (acks.incrementAndGet() == target) {
                reached.countDown();
            }
        });
        return stage;
    }

    @Override
    public boolean flush(Duration timeout) {
        return delegate.flush(timeout);
    }

    @Override
    public void sendPending() {
        if (sendPending) {
            delegate.sendPending();
        }
    }

    /** The wrapped broker's capabilities (its {@code PurgeListener} among them). */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        return delegate.capability(type);
    }

    @Override
    public void close(Duration timeout) {
        delegate.close(timeout);
    }

    /**
     * A record the Dispatcher settled without a send (a superseded latest-only record, told by its observer): it
     * counts towards {@code target} as an acknowledgement does.
     */
    void settledWithoutSend() {
        lastAck.accumulateAndGet(System.nanoTime(), Math::max);
        settledUnsent.incrementAndGet();
        if (acks.incrementAndGet() == target) {
            reached.countDown();
        }
    }

    /** How many records were settled without a send ({@link #settledWithoutSend}). */
    long settledUnsent() {
        return settledUnsent.get();
    }

    /** Waits until {@code target} records were acknowledged; false on timeout. */
    boolean awaitAcks(Duration timeout) throws InterruptedException {
        return reached.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    long firstSendNanos() {
        return firstSend.get();
    }

    long firstAckNanos() {
        return firstAck.get();
    }

    long lastAckNanos() {
        return lastAck.get();
    }

    long acks() {
        return acks.get();
    }

    /** Time spent inside the real broker's {@code send} calls (on the caller's thread). */
    long sendNanos() {
        return sendNanos.sum();
    }

    long failures() {
        return failures.get();
    }
}
