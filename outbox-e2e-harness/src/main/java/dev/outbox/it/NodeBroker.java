package dev.outbox.it;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One dispatcher's broker as the scenario sees it: a real broker (a {@code KafkaMessageBroker}, or another
 * {@link DataBroker}'s) whose every send is logged in the scenario's {@link SendLog}, and which can
 * {@linkplain #crash() crash}: the client is closed at once, without flushing (records not yet acknowledged fail,
 * what was on the wire may or may not land), and nothing is sent any more — what a killed process does to its
 * producer.
 */
final class NodeBroker implements MessageBroker {
    private final String node;
    private final MessageBroker delegate;
    private final SendLog log;
    private final AtomicLong armedAt = new AtomicLong(Long.MAX_VALUE);
    private final AtomicLong firstAckAfterArm = new AtomicLong();
    private final AtomicLong firstAckOfSendAfterArm = new AtomicLong();
    private volatile boolean crashed;

    NodeBroker(String node, MessageBroker delegate, SendLog log) {
        this.node = node;
        this.delegate = delegate;
        this.log = log;
    }

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        if (crashed) {
            return CompletableFuture.failedFuture(DeliveryException.retriable(node + " has crashed", null));
        }
        SendLog.Send s = log.sent(node, record);
        CompletionStage<Void> stage;
        try {
            stage = delegate.send(record);
        } catch (RuntimeException e) {
            s.done(e);
            throw e;
        }
        return stage.whenComplete((ok, error) -> {
            s.done(error);
            long armed = armedAt.get();
            if (error == null && s.doneNanos() - armed > 0) {
                firstAckAfterArm.compareAndSet(0, s.doneNanos());
                if (s.sentNanos - armed > 0) {
                    firstAckOfSendAfterArm.compareAndSet(0, s.doneNanos());
                }
            }
        });
    }

    /** Starts watching for the first acknowledgement after {@code nanos} ({@link System#nanoTime()}). */
    void armFirstAck(long nanos) {
        firstAckAfterArm.set(0);
        firstAckOfSendAfterArm.set(0);
        armedAt.set(nanos);
    }

    /** When the first acknowledgement after {@link #armFirstAck} arrived, or 0 if none yet. */
    long firstAckAfterArm() {
        return firstAckAfterArm.get();
    }

    /**
     * When the first acknowledgement of a record sent after {@link #armFirstAck} arrived, or 0 if none yet (an
     * acknowledgement of a record already on its way when the arm was set does not count).
     */
    long firstAckOfSendAfterArm() {
        return firstAckOfSendAfterArm.get();
    }

    /** Stops sending and closes the producer at once, without flushing. */
    void crash() {
        crashed = true;
        delegate.close(Duration.ZERO);
    }

    @Override
    public boolean flush(Duration timeout) {
        return delegate.flush(timeout);
    }

    @Override
    public void sendPending() {
        delegate.sendPending();
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
}
