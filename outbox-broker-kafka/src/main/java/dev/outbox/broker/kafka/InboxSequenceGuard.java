package dev.outbox.broker.kafka;

import dev.outbox.KeySequence;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The key sequence check in the consumer's record path: reads the headers, asks {@link KeySequenceCheck}, reports
 * breaks (a WARN line, the listener, the counters) and, with {@link OnSequenceBreak#HOLD}, holds a partition on a
 * gap or a reorder until {@link #release} or the hold timeout. Runs on the consumer thread, but for {@link #held()}
 * and {@link #release}, which any thread may call.
 */
final class InboxSequenceGuard {
    /** The longest a held partition waits before it looks at its hold again. */
    private static final long RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    /** Thrown inside the inbox's transaction to leave a held record unhandled; the transaction is rolled back. */
    static final class Held extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Held() {
            super("held on a sequence break", null, false, false);
        }
    }

    /** A partition held on the record at {@code breakage().offset()}. */
    private static final class Hold {
        final SequenceBreak breakage;
        final long since;
        volatile boolean released;

        Hold(SequenceBreak breakage, long since) {
            this.breakage = breakage;
            this.since = since;
        }
    }

    private final OnSequenceBreak mode;
    private final long holdTimeoutNanos;
    private final KafkaInboxConsumer.Listener listener;
    private final InboxCounts counts;
    private final String consumerName;
    private final KeySequenceCheck check;
    private final Map<TopicPartition, Hold> holds = new ConcurrentHashMap<>();
    /** Per partition, the record whose COMMIT failed on the connection and its verdict; consumer thread only. */
    private final Map<TopicPartition, Uncertain> beforeUnknownCommit = new HashMap<>();

    private record Uncertain(long offset, KeySequenceCheck.Verdict verdict) {
    }

    InboxSequenceGuard(OnSequenceBreak mode, Duration holdTimeout, int keysPerPartition,
                       KafkaInboxConsumer.Listener listener, InboxCounts counts, String consumerName) {
        this.mode = mode;
        this.holdTimeoutNanos = holdTimeout.toNanos();
        this.listener = listener;
        this.counts = counts;
        this.consumerName = consumerName;
        this.check = new KeySequenceCheck(keysPerPartition);
    }

    /**
     * How long the partition's head record must still wait on its hold: 0 if it is not held, was released, or its
     * hold timed out (it is then handled as if released); else at most {@code RECHECK_NANOS}.
     */
    long waitNanos(TopicPartition tp, ConsumerRecord<String, byte[]> record, long now) {
        Hold hold = holds.get(tp);
        if (hold == null || hold.released || hold.breakage.offset() != record.offset()) {
            return 0;
        }
        long left = hold.since + holdTimeoutNanos - now;
        if (left <= 0) {
            hold.released = true;
            log.warn("Inbox consumer {}: the hold of {}-{}@{} (key {}) timed out after {} ms; handling it", consumerName,
                    tp.topic(), tp.partition(), record.offset(), record.key(),
                    TimeUnit.NANOSECONDS.toMillis(holdTimeoutNanos));
            return 0;
        }
        return Math.min(left, RECHECK_NANOS);
    }

    /**
     * Checks a record whose message id is new, inside the inbox's transaction, before its handler runs; changes no
     * memory ({@link #done} does, once the transaction committed).
     *
     * @return the verdict, or {@code null} if the record is not checked (the check off, no or a bad header)
     * @throws Held if the record breaks its key's sequence, the mode is {@link OnSequenceBreak#HOLD} and its hold
     *              was not released: the caller rolls back and its partition waits
     */
    KeySequenceCheck.Verdict check(TopicPartition tp, ConsumerRecord<String, byte[]> record) {
        Long sequence = sequence(record, true);
        if (sequence == null) {
            return null;
        }
        Headers headers = record.headers();
        boolean replayed = headers.lastHeader(KeySequence.REPLAYED) != null;
        List<Long> skipped = skipped(record);
        KeySequenceCheck.Verdict v = check.classify(tp, record.offset(), record.key(), sequence, replayed, skipped);
        if (mode == OnSequenceBreak.HOLD && v.breakage() != null && !v.breakage().kind().deliberate()) {
            Hold hold = holds.get(tp);
            if (hold == null || hold.breakage.offset() != record.offset()) {
                report(v.breakage(), true); // first, so that whoever sees the hold in held() has heard of it
                holds.put(tp, new Hold(v.breakage(), System.nanoTime()));
                throw new Held();
            }
            if (!hold.released) {
                throw new Held();
            }
        }
        return v;
    }

    /**
     * The record's transaction committed (or it was recorded as failed): its number becomes its key's last, and a
     * break not reported yet (when it was held) is reported.
     *
     * @param verdict what {@link #check} said, or {@code null} when it did not run (the id was known: a redelivery,
     *                or a record recorded as failed), which is never reported
     */
    void done(TopicPartition tp, ConsumerRecord<String, byte[]> record, KeySequenceCheck.Verdict verdict) {
        beforeUnknownCommit.remove(tp);
        Hold hold = holds.get(tp);
        boolean wasHeld = hold != null && hold.breakage.offset() == record.offset();
        if (wasHeld) {
            holds.remove(tp);
        }
        if (verdict != null) {
            check.accept(tp, verdict.key(), verdict.sequence());
            if (verdict.breakage() != null && !wasHeld) {
                report(verdict.breakage(), false);
            }
            return;
        }
        Long sequence = sequence(record, false);
        if (sequence != null) {
            check.accept(tp, record.key(), sequence);
        }
    }

    /**
     * The COMMIT of the record at {@code offset}, checked with {@code verdict}, failed on the connection: if its
     * retry finds it applied after all, {@link #verdictBefore} gives the verdict back, so that its break is reported.
     */
    void commitUnknown(TopicPartition tp, long offset, KeySequenceCheck.Verdict verdict) {
        beforeUnknownCommit.put(tp, new Uncertain(offset, verdict));
    }

    /** The verdict kept by {@link #commitUnknown} for this record, or null. */
    KeySequenceCheck.Verdict verdictBefore(TopicPartition tp, ConsumerRecord<String, byte[]> record) {
        Uncertain u = beforeUnknownCommit.remove(tp);
        return u != null && u.offset() == record.offset() ? u.verdict() : null;
    }

    /** Drops the memory and holds of partitions this consumer no longer owns. */
    void forget(Collection<TopicPartition> partitions) {
        check.forget(partitions);
        partitions.forEach(holds::remove);
        partitions.forEach(beforeUnknownCommit::remove);
    }

    /** The breaks whose partitions are held now. */
    List<SequenceBreak> held() {
        List<SequenceBreak> out = new ArrayList<>();
        for (Hold h : holds.values()) {
            if (!h.released) {
                out.add(h.breakage);
            }
        }
        return out;
    }

    /** Lets a held partition go on; returns whether it was held. */
    boolean release(TopicPartition tp) {
        Hold hold = holds.get(tp);
        if (hold == null || hold.released) {
            return false;
        }
        hold.released = true;
        log.info("Inbox consumer {}: the hold of {}-{}@{} released", consumerName, tp.topic(), tp.partition(),
                hold.breakage.offset());
        return true;
    }

    private void report(SequenceBreak b, boolean holding) {
        counts.sequenceBreak(b.kind());
        log.warn("Inbox consumer {}: key sequence {} on {}-{}@{}, key {}: expected {}, got {}{}{}", consumerName,
                b.kind(), b.topic(), b.partition(), b.offset(), b.key(), b.expected(), b.actual(),
                b.missingCount() > 0 ? ", missing " + b.missingCount() + " " + b.missing() : "",
                holding ? "; its partition is held until released or " + TimeUnit.NANOSECONDS.toMillis(
                        holdTimeoutNanos) + " ms" : "");
        listener.sequenceBreak(b);
    }

    private Long sequence(ConsumerRecord<String, byte[]> record, boolean warn) {
        if (mode == OnSequenceBreak.OFF) {
            return null;
        }
        Header h = record.headers().lastHeader(KeySequence.SEQUENCE);
        if (h == null) {
            return null;
        }
        try {
            return KeySequence.decode(KeySequence.SEQUENCE, h.value());
        } catch (IllegalArgumentException e) {
            if (warn) {
                log.warn("Inbox consumer {}: {}-{}@{} not checked: {}", consumerName, record.topic(),
                        record.partition(), record.offset(), e.getMessage());
            }
            return null;
        }
    }

    private List<Long> skipped(ConsumerRecord<String, byte[]> record) {
        Header h = record.headers().lastHeader(KeySequence.SKIPPED);
        if (h == null) {
            return List.of();
        }
        try {
            return KeySequence.decodeList(h.value());
        } catch (IllegalArgumentException e) {
            log.warn("Inbox consumer {}: {}-{}@{}: {} ignored: {}", consumerName, record.topic(), record.partition(),
                    record.offset(), KeySequence.SKIPPED, e.getMessage());
            return List.of();
        }
    }
}
