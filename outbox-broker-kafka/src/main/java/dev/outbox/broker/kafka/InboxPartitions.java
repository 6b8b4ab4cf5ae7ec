package dev.outbox.broker.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The records fetched per partition, waiting in partition order, and the retry state of each partition's head
 * record: its failed attempts, when it may be tried again, its last error, and whether its last COMMIT's outcome is
 * unknown. Used by the consumer thread only; not thread-safe.
 */
final class InboxPartitions {
    private final Map<TopicPartition, ArrayDeque<ConsumerRecord<String, byte[]>>> queues = new LinkedHashMap<>();
    private final Map<TopicPartition, Integer> attempts = new HashMap<>();
    private final Map<TopicPartition, Long> retryAt = new HashMap<>();
    private final Map<TopicPartition, Throwable> lastError = new HashMap<>();
    /** Per partition, the offset of the record whose handler ran but whose COMMIT failed: its outcome is unknown. */
    private final Map<TopicPartition, Long> commitUnknown = new HashMap<>();

    /** Queues polled records behind those of their partition that wait already. */
    void add(ConsumerRecords<String, byte[]> records) {
        for (TopicPartition tp : records.partitions()) {
            queues.computeIfAbsent(tp, p -> new ArrayDeque<>()).addAll(records.records(tp));
        }
    }

    /** The partitions in the order they take turns. */
    Collection<TopicPartition> partitions() {
        return queues.keySet();
    }

    /** The partitions with records waiting, which fetch nothing more until they are done. */
    List<TopicPartition> busy() {
        List<TopicPartition> busy = new ArrayList<>();
        for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<String, byte[]>>> e : queues.entrySet()) {
            if (!e.getValue().isEmpty()) {
                busy.add(e.getKey());
            }
        }
        return busy;
    }

    /** Nanoseconds until a record can be worked on (zero if one can now), at most {@code max}. */
    long nanosUntilReady(long now, long max) {
        long wait = max;
        for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<String, byte[]>>> e : queues.entrySet()) {
            if (!e.getValue().isEmpty()) {
                Long at = retryAt.get(e.getKey());
                wait = Math.min(wait, at == null ? 0 : Math.max(0, at - now));
            }
        }
        return wait;
    }

    /** The partition's next record if there is one and its retry is not due later than {@code now}; else null. */
    ConsumerRecord<String, byte[]> ready(TopicPartition tp, long now) {
        ArrayDeque<ConsumerRecord<String, byte[]>> queue = queues.get(tp);
        Long at = retryAt.get(tp);
        if (queue == null || queue.isEmpty() || (at != null && at - now > 0)) {
            return null;
        }
        return queue.peek();
    }

    /** The head record is done: removes it and its retry state; returns whether the partition has none left. */
    boolean done(TopicPartition tp) {
        ArrayDeque<ConsumerRecord<String, byte[]>> queue = queues.get(tp);
        queue.poll();
        commitUnknown.remove(tp);
        attempts.remove(tp);
        retryAt.remove(tp);
        lastError.remove(tp);
        return queue.isEmpty();
    }

    /** The handler failures of the head record so far. */
    int attempts(TopicPartition tp) {
        return attempts.getOrDefault(tp, 0);
    }

    /** What the handler threw on the head record last, or null. */
    Throwable lastError(TopicPartition tp) {
        return lastError.get(tp);
    }

    /** The head record's handler failed for the {@code attempt}th time; it is tried again at {@code at}. */
    void failed(TopicPartition tp, int attempt, Throwable error, long at) {
        attempts.put(tp, attempt);
        lastError.put(tp, error);
        retryAt.put(tp, at);
    }

    /** The head record waits, without a failed attempt (its partition is held), until {@code at}. */
    void waitUntil(TopicPartition tp, long at) {
        retryAt.put(tp, at);
    }

    /** The COMMIT of the record at {@code offset} failed on the connection: it may have been applied. */
    void commitUnknown(TopicPartition tp, long offset) {
        commitUnknown.put(tp, offset);
    }

    /** Forgets and returns the offset whose COMMIT's outcome was unknown, or null. */
    Long takeCommitUnknown(TopicPartition tp) {
        return commitUnknown.remove(tp);
    }

    /** Drops the records and retry state of partitions this consumer no longer owns. */
    void forget(Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            queues.remove(tp);
            attempts.remove(tp);
            retryAt.remove(tp);
            lastError.remove(tp);
            commitUnknown.remove(tp);
        }
    }
}
