package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.testkit.InMemoryCommitLog.ParkedEntry;

import java.time.Clock;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The parked area of an {@link InMemoryCommitLog}, which stays a table: parked messages by a parked id, listed,
 * counted, discarded, and taken out to be replayed (the log appends them as a new committed transaction).
 *
 * <p>Thread-safe: every call is atomic under the log's lock.
 */
final class CommitLogParkedArea {
    private final Object lock;
    private final Clock clock;
    /** Parked messages by parked id. Guarded by {@link #lock}. */
    private final TreeMap<Long, ParkedEntry> parked = new TreeMap<>();
    /** The last parked id taken. Guarded by {@link #lock}. */
    private long parkedIds;

    CommitLogParkedArea(Object lock, Clock clock) {
        this.lock = lock;
        this.clock = clock;
    }

    /** Parks one message; returns its parked id. */
    long park(byte[] payload, String topic, String key, int attempts, String reason) {
        synchronized (lock) {
            long id = ++parkedIds;
            parked.put(id, new ParkedEntry(id, payload, topic, key, attempts, reason, clock.instant()));
            return id;
        }
    }

    List<ParkedEntry> parked(int limit) {
        synchronized (lock) {
            return parked.values().stream().limit(limit).toList();
        }
    }

    long parkedCount() {
        synchronized (lock) {
            return parked.size();
        }
    }

    /** Deletes the given parked messages for good; returns how many there were. */
    int discard(Collection<Long> ids) {
        synchronized (lock) {
            int n = 0;
            for (Long id : ids) {
                if (id != null && parked.remove(id) != null) {
                    n++;
                }
            }
            return n;
        }
    }

    /**
     * Removes the given parked messages, in ascending parked id, and adds each to {@code messages} marked as
     * replayed ({@link dev.outbox.KeySequence#REPLAYED}: its parked id, as the SQL stores' replay marks it) and its
     * writer id to {@code writerIds}. Caller holds {@link #lock}.
     */
    void take(Collection<Long> parkedIdsToReplay, List<OutboxMessage> messages, List<Long> writerIds) {
        for (Long id : new TreeSet<>(parkedIdsToReplay)) {
            ParkedEntry p = parked.remove(id);
            if (p != null) {
                InMemoryCommitLog.Decoded d = CommitLogCodec.decode(p.payload());
                messages.add(d.message().withHeader(dev.outbox.Header.of(dev.outbox.KeySequence.REPLAYED,
                        dev.outbox.KeySequence.encode(id)))); // as the SQL stores' replay marks it

                writerIds.add(d.writerId());
            }
        }
    }

    /** The writer ids of every parked message, in the order they were parked. */
    List<Long> writerIds() {
        synchronized (lock) {
            List<Long> ids = new ArrayList<>();
            for (ParkedEntry p : parked.values()) {
                ids.add(CommitLogCodec.decode(p.payload()).writerId());
            }
            return ids;
        }
    }

    /** The parked ids, ascending. Caller holds {@link #lock}. */
    Set<Long> ids() {
        return parked.keySet();
    }
}
