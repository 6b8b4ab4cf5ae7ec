package dev.outbox.internal;

import dev.outbox.OutboxRecord;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.function.Function;

/**
 * Which keys of the {@link KeySchedule} may send now, in the order they became so, and which wait for their head
 * record's next attempt time. Keys with no record in flight only.
 *
 * <p>A queue with flags rather than a {@code LinkedHashSet}: each key that became {@linkplain KeySchedule.KeyState#ready
 * ready} is appended, and an entry is stale when its key is not ready any more or has a later entry (it became ready
 * again since: its place is the later one). Stale entries are skipped when taken: no hashing, no node per entry.
 * Waiting entries go stale too and are checked when due.
 *
 * <p>Not thread-safe: owned by the {@link KeySchedule}, guarded like it.
 */
final class ReadyKeys {
    private record Due(Instant at, String key, long id) {
    }

    private final Clock clock;
    private final ArrayDeque<KeySchedule.KeyState> queue = new ArrayDeque<>();
    /** Keys ready. */
    private int count;
    private final PriorityQueue<Due> waiting = new PriorityQueue<>(Comparator.comparing(Due::at));

    ReadyKeys(Clock clock) {
        this.clock = clock;
    }

    /** Keys ready now (after the last {@link #promoteDue}). */
    int count() {
        return count;
    }

    /** The key is not ready any more: its entry goes stale. */
    void unready(KeySchedule.KeyState ks) {
        if (ks.ready) {
            ks.ready = false;
            count--;
        }
    }

    /** Files a key with no flight and head record {@code head}: ready if due, else waiting until it is. */
    void file(KeySchedule.KeyState ks, OutboxRecord head) {
        Instant at = head.nextAttemptAt();
        if (at == null || !at.isAfter(clock.instant())) {
            markReady(ks);
        } else {
            waiting.add(new Due(at, ks.key, head.id()));
        }
    }

    /** Makes the waiting keys whose time came ready; {@code keys} finds a key's current state. */
    void promoteDue(Function<String, KeySchedule.KeyState> keys) {
        if (waiting.isEmpty()) {
            return;
        }
        Instant now = clock.instant();
        while (!waiting.isEmpty() && !waiting.peek().at().isAfter(now)) {
            Due d = waiting.poll();
            KeySchedule.KeyState ks = keys.apply(d.key());
            if (valid(ks, d)) {
                markReady(ks);
            }
        }
    }

    /** The earliest next attempt time among waiting keys, or null if none waits. */
    Instant nextDue(Function<String, KeySchedule.KeyState> keys) {
        while (!waiting.isEmpty() && !valid(keys.apply(waiting.peek().key()), waiting.peek())) {
            waiting.poll();
        }
        return waiting.isEmpty() ? null : waiting.peek().at();
    }

    /** Takes the key that became ready first and is still ready (skipping stale entries), or null if none is. */
    KeySchedule.KeyState poll() {
        KeySchedule.KeyState ks;
        while ((ks = queue.pollFirst()) != null) {
            ks.readyEntries--;
            if (ks.ready && ks.readyEntries == 0) {
                ks.ready = false;
                count--;
                return ks;
            }
        }
        return null;
    }

    /** Forgets every key (the keys' own flags are reset by the caller). */
    void clear() {
        queue.clear();
        count = 0;
        waiting.clear();
    }

    private void markReady(KeySchedule.KeyState ks) {
        if (!ks.ready) {
            ks.ready = true;
            count++;
            ks.readyEntries++;
            queue.addLast(ks);
        }
    }

    /** Whether a waiting entry still describes its key's state {@code ks}: no flight, and the same head record. */
    private static boolean valid(KeySchedule.KeyState ks, Due d) {
        if (ks == null || ks.flight != null) {
            return false;
        }
        OutboxRecord head = ks.queue.peekFirst();
        return head != null && head.id() == d.id() && d.at().equals(head.nextAttemptAt());
    }
}
