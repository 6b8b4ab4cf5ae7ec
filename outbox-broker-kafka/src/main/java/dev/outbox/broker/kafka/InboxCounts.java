package dev.outbox.broker.kafka;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/** What the consumer thread did to records, counted for {@link KafkaInboxConsumer}'s getters; thread-safe. */
final class InboxCounts {
    final AtomicLong applied = new AtomicLong();
    final AtomicLong duplicates = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    private final AtomicLongArray sequenceBreaks = new AtomicLongArray(SequenceBreak.Kind.values().length);

    void sequenceBreak(SequenceBreak.Kind kind) {
        sequenceBreaks.incrementAndGet(kind.ordinal());
    }

    long sequenceBreaks(SequenceBreak.Kind kind) {
        return sequenceBreaks.get(kind.ordinal());
    }
}
