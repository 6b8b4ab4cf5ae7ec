package dev.outbox.it;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The downstream consumer of a scenario, whatever the broker: a subclass consumes every partition (queue) of the data
 * topic from the beginning while the dispatchers publish and hands each record to {@link #take}, which checks it as it
 * arrives. Per key it keeps the sequence numbers in arrival order, flags at once a record older than the key's latest
 * (a G2 violation: a retry may repeat the latest record, never an older one), counts repeats (duplicates), and notes
 * the longest pause between two records. Thread-safe: the consumer thread updates, the test reads, under the
 * watcher's lock.
 */
abstract class DataWatcher implements AutoCloseable {

    /** One consumed copy of a record. */
    record Copy(int seq, String token, long arrivedNanos) {
    }

    private final Map<String, List<Copy>> byKey = new HashMap<>();
    private final Map<String, Integer> lastSeq = new HashMap<>();
    private final List<String> violations = new ArrayList<>();
    private final List<String> foreign = new ArrayList<>();
    private long records;
    private long distinct;
    private long duplicates;
    private long redelivered;
    private long lastArrival;
    private long longestGapNanos;
    /** A failure of the consumer thread, if it died. */
    protected volatile Throwable failure;

    /** Starts consuming. */
    abstract void start();

    /** Stops consuming and releases the client. */
    @Override
    public abstract void close() throws InterruptedException;

    /**
     * Checks one record that arrived at {@code now} ({@link System#nanoTime()}); {@code where} says where it was
     * read (partition and offset, queue and delivery), for the report of a violation.
     */
    protected final synchronized void take(String key, byte[] value, String where, long now) {
        records++;
        int seq = Values.seqOf(value);
        if (seq < 0) {
            foreign.add(key + "@" + where);
            return;
        }
        String token = Values.tokenOf(value);
        byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(new Copy(seq, token, now));
        Integer last = lastSeq.get(key);
        if (last == null || seq > last) {
            lastSeq.put(key, seq);
            distinct++;
        } else if (seq == last) {
            duplicates++;
        } else {
            violations.add("key " + key + ": seq " + seq + " (" + token + ") arrived after seq " + last + " ("
                    + where + ")");
        }
        arrived(now);
    }

    /**
     * Checks a record that the broker delivered to the watcher again ({@code redelivered}: the watcher's own
     * acknowledgement was lost with its connection): a copy the watcher already took is the consumer's repeat, not
     * the outbox's — counted in {@link #redelivered()}, not checked again; any other is {@linkplain #take taken}.
     */
    protected final synchronized void takeRedelivered(String key, byte[] value, String where, long now) {
        int seq = Values.seqOf(value);
        String token = Values.tokenOf(value);
        boolean seen = seq >= 0 && byKey.getOrDefault(key, List.of()).stream()
                .anyMatch(c -> c.seq() == seq && c.token().equals(token));
        if (seen) {
            redelivered++;
            arrived(now);
        } else {
            take(key, value, where, now);
        }
    }

    private void arrived(long now) {
        if (lastArrival != 0 && now - lastArrival > longestGapNanos) {
            longestGapNanos = now - lastArrival;
        }
        lastArrival = now;
    }

    /** Records consumed so far that advanced their key (each committed message counts once). */
    synchronized long distinct() {
        return distinct;
    }

    /** Records consumed so far, repeats included (redeliveries of {@link #takeRedelivered} not). */
    synchronized long records() {
        return records;
    }

    synchronized long duplicates() {
        return duplicates;
    }

    /** Copies the broker delivered to the watcher again after its own acknowledgement was lost (not duplicates). */
    synchronized long redelivered() {
        return redelivered;
    }

    /** Out-of-order arrivals (G2 violations), described. */
    synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    /** Records that no writer wrote (poison records must never show up here). */
    synchronized List<String> foreign() {
        return List.copyOf(foreign);
    }

    /** Every consumed copy per key, in arrival order. */
    synchronized Map<String, List<Copy>> copies() {
        Map<String, List<Copy>> out = new HashMap<>();
        byKey.forEach((k, v) -> out.put(k, List.copyOf(v)));
        return out;
    }

    synchronized long longestGapMillis() {
        return TimeUnit.NANOSECONDS.toMillis(longestGapNanos);
    }

    /** Whether every key has reached at least the given sequence number. */
    synchronized boolean reached(Map<String, Integer> lastCommittedSeq) {
        for (Map.Entry<String, Integer> e : lastCommittedSeq.entrySet()) {
            Integer seen = lastSeq.get(e.getKey());
            if (seen == null || seen < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    Throwable failure() {
        return failure;
    }
}
