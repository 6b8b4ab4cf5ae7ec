package dev.outbox.broker.kafka;

/**
 * What {@link KafkaInboxConsumer} does about a record that breaks its key's sequence (see
 * {@link KafkaInboxConsumer.Builder#onSequenceBreak}).
 */
public enum OnSequenceBreak {
    /** No check: the sequence headers are not read. */
    OFF,
    /** Report every break (a WARN log line, the listener, the counters) and handle the record as usual. */
    REPORT,
    /**
     * Report every break; a {@link SequenceBreak.Kind#GAP} or {@link SequenceBreak.Kind#REORDER} record is not
     * handled and its partition waits until {@link KafkaInboxConsumer#release} or the hold timeout. Deliberate breaks
     * (replays, skips) are reported and handled.
     */
    HOLD
}
