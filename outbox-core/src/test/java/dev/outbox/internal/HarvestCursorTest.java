package dev.outbox.internal;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.ReadResult;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link HarvestCursor} driven by hand, and against a model of a database's transactions over many seeds. */
class HarvestCursorTest {

    private static OutboxRecord record(long id, String key) {
        return new OutboxRecord(id, Instant.EPOCH, OutboxMessage.of("t", key, new byte[]{1}), 0, null, null);
    }

    private static ReadResult read(long token, long horizon, long... ids) {
        List<OutboxRecord> records = new ArrayList<>();
        for (long id : ids) {
            records.add(record(id, "k" + id));
        }
        return ReadResult.of(records, token, horizon);
    }

    @Test
    void aReadMovesTheCursorAndRecordsTheIdsItPassedAsGaps() {
        HarvestCursor c = new HarvestCursor(10);
        HarvestCursor.Request r = c.request(100);
        assertThat(r.after()).isZero();
        assertThat(r.recheck()).isEmpty();

        HarvestCursor.Advance a = c.advance(r, read(50, 40, 1, 2, 5, 6, 9));

        assertThat(a.stale()).isFalse();
        assertThat(c.position()).isEqualTo(9);
        assertThat(c.gaps()).containsExactly(new IdRange(3, 4), new IdRange(7, 8));
        assertThat(c.request(100).recheck()).containsExactly(new IdRange(3, 4), new IdRange(7, 8));
    }

    @Test
    void aGapIsClosedWhenItsRowArrivesOrWhenTheHorizonPassesItsToken() {
        HarvestCursor c = new HarvestCursor(10);
        c.advance(c.request(100), read(50, 40, 1, 4));
        assertThat(c.gaps()).containsExactly(new IdRange(2, 3));

        HarvestCursor.Advance a = c.advance(c.request(100), read(60, 49, 3, 7));
        assertThat(a.late()).isEqualTo(1);
        assertThat(c.gaps()).as("3 arrived late; 2 may still commit (horizon 49 < token 50); 5..6 are new")
                .containsExactly(new IdRange(2, 2), new IdRange(5, 6));

        a = c.advance(c.request(100), read(70, 50));
        assertThat(a.closed()).as("2 can no longer commit").isEqualTo(1);
        assertThat(c.gaps()).containsExactly(new IdRange(5, 6));
        assertThat(c.position()).isEqualTo(7);
    }

    @Test
    void whenNoWriterWasRunningAnUnseenIdIsFinalAtOnce() {
        HarvestCursor c = new HarvestCursor(10);
        c.advance(c.request(100), read(50, 50, 1, 4));
        assertThat(c.gaps()).isEmpty();
        assertThat(c.position()).isEqualTo(4);
    }

    @Test
    void aFullReadVouchesOnlyForIdsUpToItsLastRow() {
        HarvestCursor c = new HarvestCursor(10);
        c.advance(c.request(100), read(50, 40, 1, 4)); // gap 2..3
        c.advance(c.request(100), read(50, 40, 10)); // gap 5..9
        HarvestCursor.Request r = c.request(2);
        HarvestCursor.Advance a = c.advance(r, read(60, 55, 3, 5));

        assertThat(a.late()).isEqualTo(2);
        assertThat(c.gaps()).as("2 closed (final, below the last row); 6..9 not vouched for by a full read")
                .containsExactly(new IdRange(6, 9));
        assertThat(c.position()).as("the cursor stays: both rows were below it").isEqualTo(10);
    }

    @Test
    void aStaleReadChangesNothing() {
        HarvestCursor c = new HarvestCursor(10);
        HarvestCursor.Request r = c.request(100);
        c.rewind();
        assertThat(c.advance(r, read(50, 40, 1, 5)).stale()).isTrue();
        assertThat(c.position()).isZero();
        assertThat(c.gaps()).isEmpty();
    }

    @Test
    void tooManyGapsMergeTheClosestNeighbours() {
        HarvestCursor c = new HarvestCursor(2);
        c.advance(c.request(100), read(50, 40, 1, 3, 5, 20));
        assertThat(c.gaps()).as("2, 4 and 6..19: 2 and 4 are closest").containsExactly(new IdRange(2, 4),
                new IdRange(6, 19));
        // the merged range also covers 3, which was read: reading it again is reported, not lost
        HarvestCursor.Advance a = c.advance(c.request(100), read(60, 40, 3));
        assertThat(c.gaps()).hasSizeLessThanOrEqualTo(2);
        assertThat(a.stale()).isFalse();
    }

    @Test
    void aRescanReadsFromTheHeadAgainAndReportsRowsFoundOutsideTheGaps() {
        HarvestCursor c = new HarvestCursor(10);
        c.advance(c.request(100), read(50, 50, 1, 2, 3, 8)); // no gaps: 4..7 final at once
        c.rescan();
        assertThat(c.rescanning()).isTrue();
        HarvestCursor.Request r = c.request(100);
        assertThat(r.after()).isZero();

        HarvestCursor.Advance a = c.advance(r, read(60, 60, 2, 5, 9));

        assertThat(a.unexpected()).containsExactlyInAnyOrder(2L, 5L);
        assertThat(c.position()).isEqualTo(9);
        assertThat(c.rescanning()).isFalse();
        assertThat(c.gaps()).isEmpty();
    }

    @Test
    void aFullRescanReadContinuesFromItsLastRow() {
        HarvestCursor c = new HarvestCursor(10);
        c.advance(c.request(100), read(50, 50, 10));
        c.rescan();
        c.advance(c.request(2), read(50, 50, 3, 4));
        assertThat(c.position()).isEqualTo(4);
        assertThat(c.rescanning()).isTrue();
        c.advance(c.request(2), read(50, 50));
        assertThat(c.position()).isEqualTo(10);
        assertThat(c.gaps()).as("a rescan below the highest id seen makes no gaps").isEmpty();
    }

    /**
     * A model of a database: transactions take an ordinal (xid) when they begin, then ids; rows are visible once
     * committed; a read's token is the next xid and its horizon the oldest running xid. Writers write each key only
     * after its previous row committed (causal order). The reader reads with the cursor, "delivers" rows and deletes
     * them. Over many seeds: every committed row delivered exactly once, each key in id order, no rolled-back row.
     */
    @Test
    void overManySeedsEveryCommittedRowIsReadOnceAndEachKeyInOrder() {
        long base = System.nanoTime();
        for (int s = 0; s < 300; s++) {
            long seed = base + s;
            try {
                runModel(new Random(seed), 1 + new Random(seed).nextInt(200));
            } catch (AssertionError e) {
                throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
            }
        }
    }

    private static final class Tx {
        final long xid;
        final List<long[]> rows = new ArrayList<>(); // {id, key}
        Tx(long xid) {
            this.xid = xid;
        }
    }

    private static void runModel(Random random, int maxGaps) {
        HarvestCursor cursor = new HarvestCursor(maxGaps);
        long nextXid = 1;
        long nextId = 1;
        TreeMap<Long, Long> committed = new TreeMap<>(); // id -> key, visible and not deleted
        Map<Long, Tx> open = new LinkedHashMap<>();
        Map<Long, Long> keyOfBusy = new HashMap<>(); // key -> xid writing it
        Map<Long, List<Long>> written = new HashMap<>(); // key -> committed ids in order
        Map<Long, List<Long>> delivered = new HashMap<>();
        List<Long> rolledBack = new ArrayList<>();
        int steps = 400 + random.nextInt(400);
        for (int step = 0; step < steps || !open.isEmpty() || !committed.isEmpty() || !cursor.gaps().isEmpty();
             step++) {
            if (step > 20_000) {
                throw new AssertionError("no progress: " + cursor + ", left " + committed.keySet());
            }
            int op = random.nextInt(10);
            if (step < steps && op < 4) {
                Tx tx = new Tx(nextXid++);
                open.put(tx.xid, tx);
            } else if (step < steps && op < 6 && !open.isEmpty()) {
                Tx tx = pick(random, open);
                long key = random.nextInt(8);
                Long busy = keyOfBusy.get(key);
                if (busy == null || busy == tx.xid) {
                    keyOfBusy.put(key, tx.xid);
                    tx.rows.add(new long[]{nextId++, key});
                }
            } else if (op < 8 && !open.isEmpty()) {
                Tx tx = pick(random, open);
                open.remove(tx.xid);
                boolean commit = random.nextInt(6) != 0;
                for (long[] row : tx.rows) {
                    keyOfBusy.remove(row[1]);
                    if (commit) {
                        committed.put(row[0], row[1]);
                        written.computeIfAbsent(row[1], k -> new ArrayList<>()).add(row[0]);
                    } else {
                        rolledBack.add(row[0]);
                    }
                }
            } else {
                long token = nextXid;
                long horizon = open.isEmpty() ? nextXid : open.keySet().stream().min(Long::compare).get();
                HarvestCursor.Request r = cursor.request(1 + random.nextInt(6));
                List<OutboxRecord> rows = new ArrayList<>();
                for (Map.Entry<Long, Long> e : committed.entrySet()) {
                    long id = e.getKey();
                    boolean inRange = r.recheck().stream().anyMatch(g -> g.contains(id));
                    if ((id > r.after() || inRange) && rows.size() < r.limit()) {
                        rows.add(record(id, "k" + e.getValue()));
                    }
                }
                cursor.advance(r, ReadResult.of(rows, token, horizon));
                for (OutboxRecord row : rows) {
                    long key = Long.parseLong(row.key().substring(1));
                    delivered.computeIfAbsent(key, k -> new ArrayList<>()).add(row.id());
                    committed.remove(row.id());
                }
            }
        }
        assertThat(delivered).as("every committed row once, per key in id order").isEqualTo(written);
        for (List<Long> ids : delivered.values()) {
            for (long id : ids) {
                assertThat(rolledBack).as("rolled back ids").doesNotContain(id);
            }
        }
    }

    private static Tx pick(Random random, Map<Long, Tx> open) {
        int i = random.nextInt(open.size());
        for (Tx tx : open.values()) {
            if (i-- == 0) {
                return tx;
            }
        }
        throw new IllegalStateException();
    }
}
