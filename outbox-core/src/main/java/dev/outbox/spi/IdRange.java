package dev.outbox.spi;

/**
 * An inclusive range of outbox row ids, {@code from} to {@code to}, that a cursor harvest reads again: ids the
 * cursor passed while they were not visible (taken by a transaction that had not committed yet, or by one that
 * rolled back). See {@link CursorHarvest#read}.
 *
 * @param from the lowest id of the range, at least 1
 * @param to   the highest id of the range, at least {@code from}
 */
public record IdRange(long from, long to) {

    /**
     * Checks the bounds.
     *
     * @param from the lowest id, at least 1
     * @param to   the highest id, at least {@code from}
     * @throws IllegalArgumentException if {@code from} is below 1 or {@code to} is below {@code from}
     */
    public IdRange {
        if (from < 1 || to < from) {
            throw new IllegalArgumentException("an id range needs 1 <= from <= to, was " + from + ".." + to);
        }
    }

    /**
     * The range of the single id {@code id}.
     *
     * @param id the id, at least 1
     * @return the range {@code id..id}
     * @throws IllegalArgumentException if {@code id} is below 1
     */
    public static IdRange of(long id) {
        return new IdRange(id, id);
    }

    /**
     * Whether {@code id} lies in this range.
     *
     * @param id any id
     * @return true if {@code from <= id <= to}
     */
    public boolean contains(long id) {
        return id >= from && id <= to;
    }

    /**
     * How many ids the range spans.
     *
     * @return {@code to - from + 1}, at least 1
     */

    public long size() {
        return to - from + 1;
    }

    @Override
    public String toString() {
        return from == to ? Long.toString(from) : from + ".." + to;
    }
}
