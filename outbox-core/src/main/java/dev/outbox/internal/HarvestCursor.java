package dev.outbox.internal;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Where a cursor harvest stands in the outbox table, as pure logic: the cursor (every row above it is still to be
 * read), and the gaps (ids at or below the cursor that no read has seen yet, because their writer had not
 * committed when the cursor passed them, or rolled back). The {@link DefaultDispatcher} asks it what to
 * {@linkplain #request read}, reads with {@link dev.outbox.spi.CursorHarvest#read}, and hands the result back to
 * {@link #advance}; the {@link KeySchedule} then takes the rows.
 *
 * <h2>Why nothing is skipped, and no key reordered</h2>
 * Ids are taken when a row is written; rows become visible when their transaction commits. A read returns every
 * committed row above the cursor (up to its limit) and every committed row in a gap. An id a read passes without
 * seeing becomes a gap stamped with the read's {@link ReadResult#gapToken() token}; a gap is given up only when a
 * later read that covered it did not return it and reported a {@link ReadResult#horizon() horizon} at or above the
 * token: the store then promises that every transaction that could have held the id has ended, so the row, had it
 * committed, would have been returned. A row that commits late is therefore returned by the first read that can see
 * it; and if a row of the same key was written after it committed (causally later), that row has a higher id and
 * the same read returns both, in id order — the late row is queued first.
 *
 * <p>A full read (as many rows as its limit) only vouches for ids up to the last row it returned: gaps above that
 * are neither closed nor created.
 *
 * <h2>Bounded</h2>
 * At most {@code maxGaps} gap ranges are kept: beyond that the two closest neighbours are merged into one range
 * (with the later token). A merged range also covers ids that were read already; reading them again is harmless,
 * because the {@link KeySchedule} refuses a record it holds and a delivered row is deleted before its key moves on.
 *
 * <h2>Rescan</h2>
 * {@link #rescan()} moves the cursor back to the head of the table while keeping what was seen: the next reads
 * return everything still in the table from the head up to the highest id seen. That is a safety net for rows the
 * store's promise did not cover (ids reset by hand, a store whose horizon is a time window); the rows it finds
 * below the highest id seen outside any gap are reported as {@linkplain Advance#unexpected() unexpected}.
 *
 * <p>Not thread-safe: single-threaded by contract (the dispatcher calls it only while holding its lock).
 */
public final class HarvestCursor {

    /**
     * One read to make.
     *
     * @param generation the cursor's generation when it was asked; a rewind in between makes the read stale
     * @param after      read rows above this id
     * @param recheck    and rows in these ranges (the gaps), ascending
     * @param limit      at most this many rows
     */
    public record Request(long generation, long after, List<IdRange> recheck, int limit) {
    }

    /**
     * What {@link #advance} made of a read.
     *
     * @param stale      the cursor was rewound after the request: nothing was changed, the rows must be ignored
     * @param late       rows returned from a gap (late commits)
     * @param closed     gap ids given up (known never to commit)
     * @param unexpected ids returned below the highest id seen before, outside any gap (a rescan's finds or rows
     *                   the harvest holds already)
     */
    public record Advance(boolean stale, int late, long closed, Set<Long> unexpected) {
        static final Advance STALE = new Advance(true, 0, 0, Set.of());
    }

    private static final class Gap {
        long from;
        long to;
        long token;

        Gap(long from, long to, long token) {
            this.from = from;
            this.to = to;
            this.token = token;
        }
    }

    private final int maxGaps;
    private final TreeMap<Long, Gap> gaps = new TreeMap<>();
    private long position;
    private long highWater;
    private long generation;

    /** @param maxGaps the most gap ranges kept before neighbours are merged, at least 1 */
    public HarvestCursor(int maxGaps) {
        if (maxGaps < 1) {
            throw new IllegalArgumentException("maxGaps must be at least 1, was " + maxGaps);
        }
        this.maxGaps = maxGaps;
    }

    /** The next read: rows above the cursor and in the gaps, at most {@code limit}. */
    public Request request(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1, was " + limit);
        }
        List<IdRange> recheck = new ArrayList<>(gaps.size());
        for (Gap g : gaps.values()) {
            recheck.add(new IdRange(g.from, g.to));
        }
        return new Request(generation, position, Collections.unmodifiableList(recheck), limit);
    }

    /**
     * Takes in what {@code request} read: closes the gaps it filled or proved final, records the ids it passed
     * without seeing as new gaps, and moves the cursor.
     */
    public Advance advance(Request request, ReadResult result) {
        if (request.generation() != generation) {
            return Advance.STALE;
        }
        long[] ids = ids(result.rows());
        boolean full = ids.length >= request.limit();
        long max = ids.length == 0 ? 0 : ids[ids.length - 1];
        long checkedUpTo = full ? max : Long.MAX_VALUE;
        long horizon = result.horizon();

        Set<Long> unexpected = new HashSet<>();
        int late = 0;
        long closed = 0;
        // 1. Existing gaps: remove what was returned, and give up what is final.
        Set<Long> returnedInGaps = new HashSet<>();
        for (long id : ids) {
            if (id <= highWater) {
                if (gapOf(id) != null) {
                    returnedInGaps.add(id);
                } else if (id > request.after()) {
                    unexpected.add(id);
                }
            }
        }
        for (long id : returnedInGaps) {
            removeId(id);
            late++;
        }
        for (Iterator<Map.Entry<Long, Gap>> it = gaps.entrySet().iterator(); it.hasNext(); ) {
            Gap g = it.next().getValue();
            if (g.from > checkedUpTo) {
                break;
            }
            if (g.token > horizon) {
                continue;
            }
            if (g.to <= checkedUpTo) {
                closed += g.to - g.from + 1;
                it.remove();
            } else {
                closed += checkedUpTo - g.from + 1;
                it.remove();
                gaps.put(checkedUpTo + 1, new Gap(checkedUpTo + 1, g.to, g.token));
                break;
            }
        }
        // 2. New gaps: ids above everything seen so far, up to the highest returned, that were not returned.
        long lower = Math.max(request.after(), highWater);
        if (result.gapToken() > horizon) { // else every writer had ended: an unseen id is final already
            long prev = lower;
            for (long id : ids) {
                if (id <= lower) {
                    continue;
                }
                if (id > prev + 1) {
                    gaps.put(prev + 1, new Gap(prev + 1, id - 1, result.gapToken()));
                }
                prev = id;
            }
        }
        // 3. The cursor: a full read vouches for ids up to its last row only.
        highWater = Math.max(highWater, max);
        position = full ? Math.max(request.after(), max) : Math.max(Math.max(request.after(), max), highWater);
        mergeWhileTooMany();
        return new Advance(false, late, closed, unexpected);
    }

    /**
     * Forgets everything: the next read starts at the head of the table and nothing read before counts as seen.
     * Makes reads requested before it stale.
     */
    public void rewind() {
        generation++;
        position = 0;
        highWater = 0;
        gaps.clear();
    }

    /** Reads again from the head of the table, keeping what was seen and the gaps; see the class comment. */
    public void rescan() {
        position = 0;
    }

    /** Rows above this id are still to be read. */
    public long position() {
        return position;
    }

    /** The highest id seen since the last {@link #rewind()}. */
    public long highWater() {
        return highWater;
    }

    /** Whether a {@link #rescan()} is still under way (the cursor is below the highest id seen). */
    public boolean rescanning() {
        return position < highWater;
    }

    /** The gap ranges, ascending. */
    public List<IdRange> gaps() {
        return request(1).recheck();
    }

    @Override
    public String toString() {
        return "HarvestCursor{position=" + position + ", highWater=" + highWater + ", gaps=" + gaps() + '}';
    }

    // ------------------------------------------------------------------------------------------ internals

    private static long[] ids(MarkResult rows) {
        long[] out = new long[rows.size()];
        int i = 0;
        for (OutboxRecord r : rows.records()) {
            out[i++] = r.id();
        }
        for (MarkResult.Rejected r : rows.rejected()) {
            out[i++] = r.id();
        }
        java.util.Arrays.sort(out);
        return out;
    }

    private Gap gapOf(long id) {
        Map.Entry<Long, Gap> e = gaps.floorEntry(id);
        return e != null && e.getValue().to >= id ? e.getValue() : null;
    }

    private void removeId(long id) {
        Gap g = gapOf(id);
        gaps.remove(g.from);
        if (g.from < id) {
            gaps.put(g.from, new Gap(g.from, id - 1, g.token));
        }
        if (id < g.to) {
            gaps.put(id + 1, new Gap(id + 1, g.to, g.token));
        }
    }

    private void mergeWhileTooMany() {
        while (gaps.size() > maxGaps) {
            Gap best = null;
            Gap bestNext = null;
            long bestDistance = Long.MAX_VALUE;
            Gap prev = null;
            for (Gap g : gaps.values()) {
                if (prev != null && g.from - prev.to < bestDistance) {
                    bestDistance = g.from - prev.to;
                    best = prev;
                    bestNext = g;
                }
                prev = g;
            }
            gaps.remove(bestNext.from);
            best.to = bestNext.to;
            best.token = Math.max(best.token, bestNext.token);
        }
    }
}
