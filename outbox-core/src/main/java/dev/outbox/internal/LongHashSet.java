package dev.outbox.internal;

import java.util.Arrays;

/**
 * A set of {@code long}s without boxing: open addressing with linear probing, and deletion by shifting the rest of
 * a probe run back (no tombstones), so that a set that sees millions of adds and removes keeps short runs. The engine
 * keeps the ids of queued records in one and changes it for every record it harvests, where a
 * {@code HashSet<Long>} allocated a {@code Long} and a node per record and chased pointers on every lookup.
 *
 * <p>Not thread-safe.
 */
final class LongHashSet {
    /** Marks a free slot; the value itself is tracked by {@link #hasEmptyValue}. */
    private static final long EMPTY = Long.MIN_VALUE;
    private static final int MIN_CAPACITY = 16;

    private long[] slots;
    private int mask;
    private int size;
    private boolean hasEmptyValue;

    LongHashSet() {
        allocate(MIN_CAPACITY);
    }

    int size() {
        return size + (hasEmptyValue ? 1 : 0);
    }

    boolean isEmpty() {
        return size() == 0;
    }

    boolean contains(long value) {
        if (value == EMPTY) {
            return hasEmptyValue;
        }
        for (int i = slot(value); ; i = (i + 1) & mask) {
            long v = slots[i];
            if (v == value) {
                return true;
            }
            if (v == EMPTY) {
                return false;
            }
        }
    }

    /** Adds {@code value}; whether it was absent. */
    boolean add(long value) {
        if (value == EMPTY) {
            boolean added = !hasEmptyValue;
            hasEmptyValue = true;
            return added;
        }
        int i = slot(value);
        for (; ; i = (i + 1) & mask) {
            long v = slots[i];
            if (v == value) {
                return false;
            }
            if (v == EMPTY) {
                break;
            }
        }
        slots[i] = value;
        if (++size > (slots.length >>> 1) + (slots.length >>> 2)) { // load factor 0.75
            rehash(slots.length << 1);
        }
        return true;
    }

    /** Removes {@code value}; whether it was present. */
    boolean remove(long value) {
        if (value == EMPTY) {
            boolean removed = hasEmptyValue;
            hasEmptyValue = false;
            return removed;
        }
        int i = slot(value);
        for (; ; i = (i + 1) & mask) {
            long v = slots[i];
            if (v == value) {
                break;
            }
            if (v == EMPTY) {
                return false;
            }
        }
        // Shift back the entries of the run after i that may sit there (their home slot is not in (i, j]).
        int gap = i;
        for (int j = (gap + 1) & mask; ; j = (j + 1) & mask) {
            long v = slots[j];
            if (v == EMPTY) {
                break;
            }
            int home = slot(v);
            boolean movable = gap <= j ? (home <= gap || home > j) : (home <= gap && home > j);
            if (movable) {
                slots[gap] = v;
                gap = j;
            }
        }
        slots[gap] = EMPTY;
        size--;
        if (slots.length > MIN_CAPACITY && size < slots.length >>> 3) {
            rehash(slots.length >>> 1); // shrink, so that clear() and scans stay proportional to what is held
        }
        return true;
    }

    void clear() {
        if (size > 0) {
            if (slots.length > MIN_CAPACITY) {
                allocate(MIN_CAPACITY);
            } else {
                Arrays.fill(slots, EMPTY);
            }
        }
        size = 0;
        hasEmptyValue = false;
    }

    private int slot(long value) {
        long h = value * 0x9E3779B97F4A7C15L; // Fibonacci hashing: consecutive ids spread over the table
        return (int) (h ^ (h >>> 32)) & mask;
    }

    private void allocate(int capacity) {
        slots = new long[capacity];
        Arrays.fill(slots, EMPTY);
        mask = capacity - 1;
    }

    private void rehash(int capacity) {
        long[] old = slots;
        allocate(capacity);
        for (long v : old) {
            if (v != EMPTY) {
                int i = slot(v);
                while (slots[i] != EMPTY) {
                    i = (i + 1) & mask;
                }
                slots[i] = v;
            }
        }
    }
}
