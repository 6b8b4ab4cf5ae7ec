package dev.outbox.internal;

import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The pending messages, by id: a ring of slots indexed by id, since ids are given consecutively and the window
 * between the oldest pending message and the newest holds at most what the engine has in flight and queued.
 * Finding, adding and removing a message cost an array access, where a {@code TreeMap} walked and rebalanced a
 * tree for each of the hundreds of thousands of messages a second a drain finishes. A finished message leaves a
 * hole until the oldest pending one moves past it. Not thread-safe (guarded by the {@link StreamHarvest}).
 */
final class PendingWindow {
    private StreamHarvest.Pending[] slots = new StreamHarvest.Pending[1024];
    /** The id of the oldest slot of the window (pending, unless the window is empty), and one past the newest. */
    private long head = 1;
    private long end = 1;
    private int size;

    boolean isEmpty() {
        return size == 0;
    }

    int size() {
        return size;
    }

    /** Adds the message with the next id (any id when the window is empty). */
    void append(StreamHarvest.Pending p) {
        if (size == 0) {
            head = p.id();
            end = p.id();
        } else if (p.id() != end) {
            throw new IllegalStateException("ids must be consecutive: expected " + end + ", got " + p.id());
        }
        if (end - head >= slots.length) {
            grow();
        }
        slots[slot(end)] = p;
        end++;
        size++;
    }

    StreamHarvest.Pending get(long id) {
        return id < head || id >= end ? null : slots[slot(id)];
    }

    /** Replaces the pending message with the same id, if any. */
    void replace(StreamHarvest.Pending p) {
        if (get(p.id()) != null) {
            slots[slot(p.id())] = p;
        }
    }

    StreamHarvest.Pending remove(long id) {
        StreamHarvest.Pending p = get(id);
        if (p == null) {
            return null;
        }
        slots[slot(id)] = null;
        size--;
        if (size == 0) {
            head = end;
        } else {
            while (slots[slot(head)] == null) {
                head++;
            }
        }
        return p;
    }

    /** The oldest pending message; the window must not be empty. */
    StreamHarvest.Pending first() {
        return slots[slot(head)];
    }

    /** The pending messages with ids from {@code from} to {@code to} inclusive, at most {@code max}. */
    void forEach(long from, long to, int max, Consumer<StreamHarvest.Pending> action) {
        int n = 0;
        for (long id = Math.max(from, head), last = Math.min(to, end - 1); id <= last && n < max; id++) {
            StreamHarvest.Pending p = slots[slot(id)];
            if (p != null) {
                action.accept(p);
                n++;
            }
        }
    }

    /** How many pending messages have ids above {@code after}, counting to {@code max} at most. */
    int countAbove(long after, int max) {
        int n = 0;
        for (long id = Math.max(after + 1, head); id < end && n < max; id++) {
            n += slots[slot(id)] == null ? 0 : 1;
        }
        return n;
    }

    void clear() {
        Arrays.fill(slots, null);
        head = end;
        size = 0;
    }

    private int slot(long id) {
        return (int) (id & (slots.length - 1));
    }

    private void grow() {
        StreamHarvest.Pending[] old = slots;
        slots = new StreamHarvest.Pending[old.length * 2];
        for (long id = head; id < end; id++) {
            slots[slot(id)] = old[(int) (id & (old.length - 1))];
        }
    }
}
