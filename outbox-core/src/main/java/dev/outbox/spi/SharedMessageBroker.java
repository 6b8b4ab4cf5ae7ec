package dev.outbox.spi;

import dev.outbox.OutboxRecord;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * A broker as one of several dispatchers sharing it sees it (a sharded dispatcher's shards, or dispatchers in one
 * test sending to one cluster): everything is passed on, except that {@link #close(Duration)} only flushes, leaving
 * the broker open for the others; whoever owns it closes it. Thread-safe if the broker is.
 */
public final class SharedMessageBroker implements MessageBroker {
    private final MessageBroker broker;

    /** @param broker the broker shared; closed by its owner, never through this */
    public SharedMessageBroker(MessageBroker broker) {
        this.broker = Objects.requireNonNull(broker, "broker");
    }

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        return broker.send(record);
    }

    @Override
    public boolean flush(Duration timeout) {
        return broker.flush(timeout);
    }

    @Override
    public void sendPending() {
        broker.sendPending();
    }

    /** Flushes for at most {@code timeout} and leaves the broker open. */
    /** The wrapped broker's capabilities (its {@code PurgeListener} among them). */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        return broker.capability(type);
    }

    @Override
    public void close(Duration timeout) {
        broker.flush(timeout);
    }

    @Override
    public String toString() {
        return broker.toString();
    }
}
