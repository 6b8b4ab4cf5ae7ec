package dev.outbox.broker.kafka;

import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The per-key sequence check as pure logic: per partition and key, the last sequence number accepted, and the
 * classification of a record's number against it. No I/O, no threads, no clock: {@link InboxSequenceGuard} drives
 * it on the consumer thread. Not thread-safe.
 *
 * <p>The memory of a partition is an LRU of at most {@code keysPerPartition} keys: a key forgotten because others
 * were seen since (or because its partition was revoked, {@link #forget}) has no last number, and its next record is
 * accepted as a new baseline, unchecked. Topic and partition together name the memory; the key alone names an entry
 * in it ({@code null}, a record without a key, is a key too).
 */
final class KeySequenceCheck {
    /** How a record's number relates to its key's last accepted number. */
    enum Outcome {
        /** No last number (a new key, or one forgotten): the record sets the baseline. */
        FIRST,
        /** The number after the last. */
        IN_ORDER,
        /** A break: see {@link Verdict#breakage()}. */
        BREAK
    }

    /**
     * The check's verdict on a record.
     *
     * @param outcome  how the number relates to the last
     * @param key      the record's key
     * @param sequence the record's number
     * @param breakage the break, when {@code outcome} is {@link Outcome#BREAK}; else {@code null}
     */
    record Verdict(Outcome outcome, String key, long sequence, SequenceBreak breakage) {
    }

    private final int keysPerPartition;
    private final Map<TopicPartition, Map<String, Long>> last = new HashMap<>();

    /**
     * A check with no memory.
     *
     * @param keysPerPartition the most keys remembered per partition, at least 1
     */
    KeySequenceCheck(int keysPerPartition) {
        if (keysPerPartition < 1) {
            throw new IllegalArgumentException("keysPerPartition must be at least 1: " + keysPerPartition);
        }
        this.keysPerPartition = keysPerPartition;
    }

    /**
     * Classifies a record of a new message (one the inbox had not processed) against its key's last number; changes
     * nothing (see {@link #accept}).
     *
     * @param tp       the record's partition
     * @param offset   the record's offset
     * @param key      the record's key, or {@code null}
     * @param sequence its {@link dev.outbox.KeySequence#SEQUENCE} number
     * @param replayed whether it carries {@link dev.outbox.KeySequence#REPLAYED}
     * @param skipped  the numbers its {@link dev.outbox.KeySequence#SKIPPED} header lists; empty if none
     * @return the verdict
     */
    Verdict classify(TopicPartition tp, long offset, String key, long sequence, boolean replayed,
                     List<Long> skipped) {
        Map<String, Long> memory = last.get(tp);
        Long previous = memory == null ? null : memory.get(key);
        if (previous == null) {
            return new Verdict(Outcome.FIRST, key, sequence, null);
        }
        long expected = previous + 1;
        if (sequence == expected) {
            return new Verdict(Outcome.IN_ORDER, key, sequence, null);
        }
        SequenceBreak b;
        if (sequence < expected) {
            b = new SequenceBreak(replayed ? SequenceBreak.Kind.REPLAY : SequenceBreak.Kind.REORDER, tp.topic(),
                    tp.partition(), offset, key, expected, sequence, List.of(), 0);
        } else {
            b = gap(tp, offset, key, expected, sequence, skipped);
        }
        return new Verdict(Outcome.BREAK, key, sequence, b);
    }

    /** Numbers expected..sequence-1 are missing: a skip if all are listed as skipped, else a gap of the others. */
    private static SequenceBreak gap(TopicPartition tp, long offset, String key, long expected, long sequence,
                                     List<Long> skipped) {
        Set<Long> listed = new HashSet<>();
        for (long s : skipped) {
            if (s >= expected && s < sequence) {
                listed.add(s);
            }
        }
        long range = sequence - expected;
        long unlisted = range - listed.size();
        List<Long> missing = new ArrayList<>();
        if (unlisted == 0) {
            for (long n = expected; n < sequence && missing.size() < SequenceBreak.MAX_LISTED; n++) {
                missing.add(n);
            }
            return new SequenceBreak(SequenceBreak.Kind.SKIP, tp.topic(), tp.partition(), offset, key, expected,
                    sequence, missing, range);
        }
        // At most MAX_LISTED + listed.size() steps, however wide the gap.
        for (long n = expected; n < sequence && missing.size() < SequenceBreak.MAX_LISTED; n++) {
            if (!listed.contains(n)) {
                missing.add(n);
            }
        }
        return new SequenceBreak(SequenceBreak.Kind.GAP, tp.topic(), tp.partition(), offset, key, expected,
                sequence, missing, unlisted);
    }

    /**
     * A record of {@code key} is done (applied, a duplicate, or recorded as failed): its number becomes the key's
     * last unless the last is higher already (a reorder or a replay does not move it back).
     *
     * @param tp       the record's partition
     * @param key      the record's key, or {@code null}
     * @param sequence the record's number
     */
    void accept(TopicPartition tp, String key, long sequence) {
        Map<String, Long> memory = last.computeIfAbsent(tp, p -> new Lru(keysPerPartition));
        Long previous = memory.get(key);
        if (previous == null || sequence > previous) {
            memory.put(key, sequence);
        }
    }

    /**
     * Drops the memory of partitions this consumer no longer owns.
     *
     * @param partitions the partitions revoked or lost
     */
    void forget(Collection<TopicPartition> partitions) {
        partitions.forEach(last::remove);
    }

    /** How many keys of {@code tp} are remembered; for tests. */
    int remembered(TopicPartition tp) {
        Map<String, Long> memory = last.get(tp);
        return memory == null ? 0 : memory.size();
    }

    /** A map in access order that drops its least recently used entry past its bound. */
    private static final class Lru extends LinkedHashMap<String, Long> {
        private final int bound;

        Lru(int bound) {
            super(16, 0.75f, true);
            this.bound = bound;
        }

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > bound;
        }
    }
}
