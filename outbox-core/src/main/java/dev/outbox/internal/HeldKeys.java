package dev.outbox.internal;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * The keys held after a park ({@code DispatcherConfig.AfterPark.HOLD_KEY}): nothing of a held key is queued or sent
 * until it is released. The held keys are the parked table's keys: the dispatcher reads them from the store when it
 * starts leading and every second while it leads ({@link #read}); a key held by a park made while such a read was
 * under way is not released by it. Holds survive a rewind; a new leadership starts with none.
 *
 * <p>Not thread-safe: owned by the {@link KeySchedule}, guarded like it.
 */
final class HeldKeys {
    /** Held keys → the {@link #seq} at which each was held. */
    private final Map<String, Long> held = new HashMap<>();
    private long seq;

    /** Holds {@code key} (again). */
    void hold(String key) {
        held.put(key, ++seq);
    }

    boolean contains(String key) {
        return !held.isEmpty() && held.containsKey(key);
    }

    boolean isEmpty() {
        return held.isEmpty();
    }

    int size() {
        return held.size();
    }

    void clear() {
        held.clear();
    }

    /** A read of the store's parked keys begins: pass the value to {@link #read}. */
    long readStarted() {
        return seq;
    }

    /**
     * The store's parked keys, read from a snapshot taken after {@link #readStarted()} returned {@code started}: the
     * keys among them not held yet are returned to be held, and every held key not among them that was held before
     * the read began is released (one held since may have been parked after the snapshot).
     *
     * @param toHold receives the keys to hold
     * @return the released keys
     */
    Set<String> read(Set<String> parkedKeys, long started, Set<String> toHold) {
        for (String key : parkedKeys) {
            if (!held.containsKey(key)) {
                toHold.add(key);
            }
        }
        Set<String> released = new HashSet<>();
        for (Iterator<Map.Entry<String, Long>> it = held.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Long> e = it.next();
            if (e.getValue() <= started && !parkedKeys.contains(e.getKey())) {
                it.remove();
                released.add(e.getKey());
            }
        }
        return released;
    }

    /** The held keys, sorted, for the simulation's state. */
    Set<String> sorted() {
        return new java.util.TreeSet<>(held.keySet());
    }
}
