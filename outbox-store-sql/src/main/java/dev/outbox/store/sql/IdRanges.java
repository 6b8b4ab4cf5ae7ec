package dev.outbox.store.sql;

import dev.outbox.spi.IdRange;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/** The recheck ranges of a cursor read, as every SQL store reads them. Stateless. */
public final class IdRanges {
    private IdRanges() {
    }

    /**
     * The ranges that start at or below {@code after}, ascending, overlapping and adjacent ones merged, so that no
     * row is read twice (a range above the cursor is read by the read's {@code id > after} anyway).
     *
     * @param recheck the read's recheck ranges, in any order; not null, without null elements
     * @param after   the read's cursor: the highest id it has passed
     * @return a new list of the merged ranges, ascending by {@code from}; empty if none starts at or below
     *         {@code after}
     * @throws NullPointerException     if {@code recheck} is null

     * @throws IllegalArgumentException naming the position of a null range
     */
    public static List<IdRange> merged(List<IdRange> recheck, long after) {
        Objects.requireNonNull(recheck, "recheck must not be null");
        List<IdRange> sorted = new ArrayList<>(recheck.size());
        for (int i = 0; i < recheck.size(); i++) {
            IdRange range = recheck.get(i);
            if (range == null) {
                throw new IllegalArgumentException("recheck contains null at position " + i);
            }
            if (range.from() <= after) {
                sorted.add(range);
            }
        }
        sorted.sort(Comparator.comparingLong(IdRange::from));
        List<IdRange> merged = new ArrayList<>(sorted.size());
        for (IdRange range : sorted) {
            IdRange last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
            if (last != null && range.from() <= last.to() + 1) {
                merged.set(merged.size() - 1, new IdRange(last.from(), Math.max(last.to(), range.to())));
            } else {
                merged.add(range);
            }
        }
        return merged;
    }
}
