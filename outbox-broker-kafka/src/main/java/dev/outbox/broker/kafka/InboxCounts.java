package dev.outbox.broker.kafka;

import java.util.concurrent.atomic.AtomicLong;

/** What the consumer thread did to records, counted for {@link KafkaInboxConsumer}'s getters; thread-safe. */
final class InboxCounts {
    final AtomicLong applied = new AtomicLong();
    final AtomicLong duplicates = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
}
