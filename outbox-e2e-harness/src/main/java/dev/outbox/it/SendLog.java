package dev.outbox.it;

import dev.outbox.OutboxRecord;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What every dispatcher of a scenario handed to Kafka and when: one {@link Send} per record passed to a real
 * producer (with the time its send completed and how), and the time each row's purge committed. Filled by
 * {@link NodeBroker} and {@link NodeStore}; read after the run to attribute duplicates to faults (G4) and to
 * check that no two sends of one key were ever outstanding at once, across all dispatchers (G2, G3).
 * Thread-safe.
 */
final class SendLog {

    /** One record handed to a producer. */
    static final class Send {
        final long id;
        final String key;
        final int seq;
        final String node;
        final UUID leaderId;
        final long sentNanos;
        private volatile long doneNanos;
        private volatile boolean acknowledged;
        private volatile String failure;

        Send(OutboxRecord r, int seq, String node) {
            this.id = r.id();
            this.key = r.key();
            this.seq = seq;
            this.node = node;
            this.leaderId = r.leaderId();
            this.sentNanos = System.nanoTime();
        }

        void done(Throwable error) {
            doneNanos = System.nanoTime();
            acknowledged = error == null;
            failure = error == null ? null : error.toString();
        }

        /** When the send completed, or 0 while it has not. */
        long doneNanos() {
            return doneNanos;
        }

        boolean acknowledged() {
            return acknowledged;
        }

        String failure() {
            return failure;
        }

        @Override
        public String toString() {
            return "send{id=" + id + ", key=" + key + ", seq=" + seq + ", node=" + node + ", leader=" + leaderId
                    + ", done=" + (doneNanos == 0 ? "no" : acknowledged ? "ack" : failure) + '}';
        }
    }

    private final Queue<Send> sends = new ConcurrentLinkedQueue<>();
    private final Map<String, Long> purged = new ConcurrentHashMap<>();
    private final boolean idsPerNode;
    private final AtomicLong purgesArmedAt = new AtomicLong(Long.MAX_VALUE);
    private final AtomicLong firstPurgeAfterArm = new AtomicLong();

    /**
     * @param idsPerNode whether record ids are each node's own (the WAL harvest numbers what each node's stream
     *                   received) rather than the outbox table's row ids, the same for every node
     */
    SendLog(boolean idsPerNode) {
        this.idsPerNode = idsPerNode;
    }

    Send sent(String node, OutboxRecord record) {
        Send s = new Send(record, Values.seqOf(record), node);
        sends.add(s);
        return s;
    }

    /** A purge of {@code ids} by {@code node} that started at {@code startedNanos} has committed. */
    void purged(String node, Collection<Long> ids, long startedNanos) {
        Long now = System.nanoTime();
        for (Long id : ids) {
            purged.putIfAbsent(recordKey(node, id), now);
        }
        if (startedNanos - purgesArmedAt.get() > 0) {
            firstPurgeAfterArm.compareAndSet(0, now);
        }
    }

    /** Starts watching for the first purge that starts after {@code nanos} and commits. */
    void armPurges(long nanos) {
        firstPurgeAfterArm.set(0);
        purgesArmedAt.set(nanos);
    }

    /** When the first purge started after {@link #armPurges} committed, or 0 if none did yet. */
    long firstPurgeAfterArm() {
        return firstPurgeAfterArm.get();
    }

    /** Every send so far, in the order they were logged. */
    List<Send> sends() {
        return new ArrayList<>(sends);
    }

    /**
     * The time each purged record's purge returned (the first time, if purged twice), by its {@link #recordKey}.
     */
    Map<String, Long> purgeTimes() {
        return Map.copyOf(purged);
    }

    /**
     * Which record {@code id} of node {@code node} is: the row id itself when ids are the table's, the node and the
     * id when each node numbers its own.
     */
    String recordKey(String node, long id) {
        return idsPerNode ? node + "#" + id : Long.toString(id);
    }
}
