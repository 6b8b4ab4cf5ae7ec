package dev.outbox.testkit;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Wraps a broker shared by several dispatchers: watches what the dispatcher promises (at most one record per
 * key in flight, at most {@code maxInFlight} in all) and does not close the shared broker, only flushes it.
 */
final class ObservingBroker implements MessageBroker {
    private final MessageBroker delegate;
    private final Map<String, AtomicInteger> perKey = new ConcurrentHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger maxInFlight = new AtomicInteger();
    private final AtomicInteger maxPerKey = new AtomicInteger();
    private volatile boolean closed;
    private final AtomicInteger sendsAfterClose = new AtomicInteger();
    /** Each record's sends through this broker, by {@link System#nanoTime()}. */
    private final Map<Long, java.util.List<Long>> sendTimes = new ConcurrentHashMap<>();

    ObservingBroker(MessageBroker delegate) {
        this.delegate = delegate;
    }

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        if (closed) {
            sendsAfterClose.incrementAndGet();
        }
        sendTimes.computeIfAbsent(record.id(), x -> new java.util.concurrent.CopyOnWriteArrayList<>())
                .add(System.nanoTime());
        AtomicInteger k = perKey.computeIfAbsent(record.key(), x -> new AtomicInteger());
        maxPerKey.accumulateAndGet(k.incrementAndGet(), Math::max);
        maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        try {
            return delegate.send(record).whenComplete((ok, e) -> {
                k.decrementAndGet();
                inFlight.decrementAndGet();
            });
        } catch (RuntimeException e) {
            k.decrementAndGet();
            inFlight.decrementAndGet();
            throw e;
        }
    }

    @Override
    public boolean flush(Duration timeout) {
        return delegate.flush(timeout);
    }

    @Override
    public void sendPending() {
        delegate.sendPending();
    }

    @Override
    public void close(Duration timeout) {
        closed = true;
        delegate.flush(timeout);
    }

    int maxInFlight() {
        return maxInFlight.get();
    }

    int maxPerKey() {
        return maxPerKey.get();
    }

    Map<Long, java.util.List<Long>> sendTimes() {
        return sendTimes;
    }

    int sendsAfterClose() {
        return sendsAfterClose.get();
    }
}
