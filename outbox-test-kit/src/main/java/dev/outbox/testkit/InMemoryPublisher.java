package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;

import java.sql.Connection;
import java.util.List;

/**
 * The publisher of an {@link InMemoryStore}: it commits every call at once, atomically, ignoring the connection,
 * then wakes the commit watchers. Thread-safe.
 */
final class InMemoryPublisher implements Publisher {
    private final InMemoryRows table;
    private final InMemoryCommitSignals signals;

    InMemoryPublisher(InMemoryRows table, InMemoryCommitSignals signals) {
        this.table = table;
        this.signals = signals;
    }

    @Override
    public void publish(Connection connection, List<OutboxMessage> messages) {
        table.publish(messages);
        signals.wakeAll();
    }

    @Override
    public String toString() {
        return "InMemoryStore.publisher";
    }
}
