package dev.outbox.sidecar;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Publishes every record to {@code prefix + topic}: an outbox's {@code topic-prefix}. Thread-safe if the broker it
 * wraps is.
 */
final class TopicPrefixBroker implements MessageBroker {
    private final MessageBroker broker;
    private final String prefix;

    TopicPrefixBroker(MessageBroker broker, String prefix) {
        this.broker = Objects.requireNonNull(broker, "broker");
        this.prefix = Objects.requireNonNull(prefix, "prefix");
    }

    /** {@code broker} itself when there is no prefix. */
    static MessageBroker of(MessageBroker broker, String prefix) {
        return prefix == null || prefix.isEmpty() ? broker : new TopicPrefixBroker(broker, prefix);
    }

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        OutboxMessage m = record.message();
        OutboxMessage prefixed;
        try {
            prefixed = OutboxMessage.of(prefix + m.topic(), m.key(), m.value(), m.headers());
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(DeliveryException.permanent("record " + record.id()
                    + " cannot be published with the topic prefix '" + prefix + "': " + e.getMessage(), e));
        }
        return broker.send(new OutboxRecord(record.id(), record.createdAt(), prefixed, record.attempts(),
                record.leaderId(), record.messageId(), record.nextAttemptAt()));
    }

    @Override
    public boolean flush(Duration timeout) {
        return broker.flush(timeout);
    }

    @Override
    public void sendPending() {
        broker.sendPending();
    }

    /** The wrapped broker's capabilities (its {@code PurgeListener} among them). */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        return broker.capability(type);
    }

    @Override
    public void close(Duration timeout) {
        broker.close(timeout);
    }
}
