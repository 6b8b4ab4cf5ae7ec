package dev.outbox.broker.kafka;

import java.util.List;
import java.util.Objects;

/**
 * A record whose per-key sequence number ({@link dev.outbox.KeySequence#SEQUENCE}) is not the one after the last
 * number {@link KafkaInboxConsumer} accepted for its topic and key: what its key sequence check reports. Immutable.
 *
 * @param kind         what the break is
 * @param topic        the record's topic
 * @param partition    the record's partition
 * @param offset       the record's offset in its partition
 * @param key          the record's key ({@code null} if it has none)
 * @param expected     the number the key's next record should carry: one past the last accepted
 * @param actual       the number the record carries
 * @param missing      for a {@link Kind#GAP}, the missing numbers not listed as skipped; for a {@link Kind#SKIP},
 *                     the skipped numbers; empty otherwise. At most {@value #MAX_LISTED}, in order: the first ones
 *                     when there are more ({@code missingCount} says how many)
 * @param missingCount how many numbers {@code missing} stands for, 0 for a reorder or a replay
 */
public record SequenceBreak(Kind kind, String topic, int partition, long offset, String key, long expected,
                            long actual, List<Long> missing, long missingCount) {
    /** The most numbers {@link #missing()} lists. */
    public static final int MAX_LISTED = 100;

    /** What a break is. */
    public enum Kind {
        /** Numbers are missing before the record's, and not all of them are listed as skipped. */
        GAP,
        /** The record's number is not after the last accepted, and it is a new message, not a replay. */
        REORDER,
        /** A record replayed from the parked area ({@link dev.outbox.KeySequence#REPLAYED}): a deliberate reorder. */
        REPLAY,
        /**
         * Numbers are missing before the record's, all listed in its {@link dev.outbox.KeySequence#SKIPPED} header
         * (records the dispatcher parked and moved on from): a deliberate gap.
         */
        SKIP;

        /**
         * Whether the break is one a sender did on purpose, not a record lost or reordered.
         *
         * @return true for {@link #REPLAY} and {@link #SKIP}
         */
        public boolean deliberate() {
            return this == REPLAY || this == SKIP;
        }
    }

    /**
     * Checks the parts.
     *
     * @param kind         what the break is; not {@code null}
     * @param topic        the record's topic; not {@code null}
     * @param partition    the record's partition
     * @param offset       the record's offset in its partition
     * @param key          the record's key, or {@code null}
     * @param expected     the number expected
     * @param actual       the number carried
     * @param missing      the numbers missing, at most {@value #MAX_LISTED}, copied; not {@code null}
     * @param missingCount how many numbers are missing in all
     * @throws NullPointerException     if {@code kind}, {@code topic} or {@code missing} is {@code null}
     * @throws IllegalArgumentException if {@code missing} lists more than {@value #MAX_LISTED} numbers or more than
     *                                  {@code missingCount}
     */
    public SequenceBreak {
        Objects.requireNonNull(kind, "kind must not be null");
        Objects.requireNonNull(topic, "topic must not be null");
        missing = List.copyOf(missing);
        if (missing.size() > MAX_LISTED || missing.size() > missingCount) {
            throw new IllegalArgumentException("missing lists " + missing.size() + " numbers, more than "
                    + MAX_LISTED + " or than missingCount " + missingCount);
        }
    }
}
