package dev.outbox.internal;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.CommitLog;
import dev.outbox.spi.CommitStream;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.StoreException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StreamHarvestTest {

    /** A log of committed transactions; each stream opened on it starts after the confirmed position. */
    private static final class Log {
        final List<CommitStream.StreamMessage> messages = new ArrayList<>();
        long confirmed;
        long position;
        int opened;
        TestStream current;

        /** Commits a transaction of the given payloads (a null payload makes an unreadable message). */
        void commit(String... payloads) {
            long end = position + payloads.length + 1;
            for (String p : payloads) {
                messages.add(new CommitStream.StreamMessage(++position, end, Instant.ofEpochSecond(end),
                        p == null ? new byte[0] : p.getBytes(StandardCharsets.UTF_8)));
            }
            position = end;
        }

        TestStream open() {
            opened++;
            current = new TestStream(this);
            return current;
        }
    }

    private static final class TestStream implements CommitStream {
        final Log log;
        final Deque<StreamMessage> unread = new ArrayDeque<>();
        long confirmedHere;
        long lastQueued;
        boolean closed;
        RuntimeException failNext;

        TestStream(Log log) {
            this.log = log;
            for (StreamMessage m : log.messages) {
                if (m.endPosition() > log.confirmed) {
                    unread.add(m);
                    lastQueued = m.position();
                }
            }
        }

        /** Takes the messages committed since this stream was opened. */
        void catchUp() {
            for (StreamMessage m : log.messages) {
                if (m.position() > lastQueued) {
                    unread.add(m);
                    lastQueued = m.position();
                }
            }
        }

        @Override
        public List<StreamMessage> poll(int max, Duration wait) {
            if (failNext != null) {
                RuntimeException e = failNext;
                failNext = null;
                throw e;
            }
            if (closed) {
                throw new StoreException("closed", null, true);
            }
            catchUp();
            List<StreamMessage> out = new ArrayList<>();
            while (out.size() < max && !unread.isEmpty()) {
                out.add(unread.poll());
            }
            return out;
        }

        @Override
        public void confirm(long position) {
            assertThat(position).as("confirmed positions never go back").isGreaterThan(confirmedHere);
            confirmedHere = position;
            log.confirmed = Math.max(log.confirmed, position);
        }

        @Override
        public long readPosition() {
            return unread.isEmpty() ? log.position : unread.getFirst().endPosition() - 1;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /** The store's ledger, as {@link CommitLog#appendLedger} and {@link CommitLog#loadLedger} keep it. */
    private interface Ledger {
        Ledger NONE = new Ledger() {
            @Override
            public long append(Map<Long, Long> finished) {
                return 0;
            }

            @Override
            public Map<Long, Long> load() {
                return Map.of();
            }
        };

        long append(Map<Long, Long> finished);

        Map<Long, Long> load();
    }

    private static StreamHarvest harvest(Log log) {
        return harvest(log, Ledger.NONE);
    }

    private static StreamHarvest harvest(Log log, Ledger ledger) {
        return new StreamHarvest(new CommitLog() {
            @Override
            public CommitStream open() {
                return log.open();
            }

            @Override
            public MarkedRow decode(long id, CommitStream.StreamMessage m) {
                return m.payload().length == 0
                        ? new MarkResult.Rejected(id, "", "", 0, "empty message at " + m.position())
                        : new MarkedRow.Readable(new OutboxRecord(id, m.commitTime(),
                        OutboxMessage.of("t", "k", m.payload()), 0, null));
            }

            @Override
            public Duration readWait() {
                return Duration.ZERO;
            }

            @Override
            public long appendLedger(Map<Long, Long> finished) {
                return ledger.append(finished);
            }

            @Override
            public Map<Long, Long> loadLedger() {
                return ledger.load();
            }

            @Override
            public void park(List<Parked> messages) {
                throw new AssertionError("the harvest never parks: the view does");
            }
        });
    }

    /** A ledger in memory, as a database row would keep it. */
    private static final class MemoryLedger implements Ledger {
        final Log log;
        Map<Long, Long> kept = Map.of();

        MemoryLedger(Log log) {
            this.log = log;
        }

        @Override
        public long append(Map<Long, Long> finished) {
            Map<Long, Long> above = new java.util.TreeMap<>(kept);
            above.putAll(finished);
            above.values().removeIf(end -> end <= log.confirmed);
            kept = Map.copyOf(above);
            return log.confirmed;
        }

        @Override
        public Map<Long, Long> load() {
            return kept;
        }
    }

    private static List<String> values(ReadResult r) {
        List<String> out = new ArrayList<>();
        r.rows().records().forEach(x -> out.add(new String(x.message().value(), StandardCharsets.UTF_8)));
        return out;
    }

    @Test
    void aNewLeaderSkipsWhatThePreviousOneFinishedAboveTheConfirmedPosition() {
        Log log = new Log();
        log.commit("k1#1");           // 1; ends at 2
        log.commit("k0#1");           // 3; ends at 4
        log.commit("k0#2");           // 5; ends at 6
        MemoryLedger ledger = new MemoryLedger(log);
        StreamHarvest old = harvest(log, ledger);
        assertThat(values(old.read(0, List.of(), 10))).containsExactly("k1#1", "k0#1", "k0#2");
        old.finished(List.of(2L, 3L)); // k0's two delivered; k1's still queued when leadership moves
        assertThat(log.confirmed).as("k1#1 holds the position back").isZero();
        assertThat(ledger.kept).containsOnlyKeys(3L, 5L);
        old.stop();

        StreamHarvest next = harvest(log, ledger);
        ReadResult r = next.read(0, List.of(), 10);
        assertThat(values(r)).as("k0's records are not sent again after k0#2").containsExactly("k1#1");
        next.finished(List.of(r.rows().records().get(0).id()));
        assertThat(log.confirmed).isEqualTo(6);
        assertThat(ledger.kept).as("saved before the confirmation: kept until a save finds them passed")
                .containsOnlyKeys(1L, 3L, 5L);
        log.commit("k2#1");
        ReadResult more = next.read(1, List.of(), 10);
        next.finished(List.of(more.rows().records().get(0).id()));
        assertThat(ledger.kept).as("the slot's position vouches for them now").doesNotContainKeys(1L, 3L, 5L);
    }

    @Test
    void whatAFailedAppendHeldIsAppendedByTheNextFinishedCallAndOnlyWhatIsNewEachTime() {
        Log log = new Log();
        log.commit("k1#1");           // 1; ends at 2
        log.commit("k0#1");           // 3; ends at 4
        log.commit("k0#2");           // 5; ends at 6
        log.commit("k2#1");           // 7; ends at 8
        MemoryLedger memory = new MemoryLedger(log);
        List<Map<Long, Long>> appended = new ArrayList<>();
        boolean[] fail = {true};
        StreamHarvest harvest = harvest(log, new Ledger() {
            @Override
            public long append(Map<Long, Long> finished) {
                if (fail[0]) {
                    fail[0] = false;
                    throw new StoreException("connection lost", null, true);
                }
                appended.add(Map.copyOf(finished));
                return memory.append(finished);
            }

            @Override
            public Map<Long, Long> load() {
                return memory.load();
            }
        });
        assertThat(values(harvest.read(0, List.of(), 10))).containsExactly("k1#1", "k0#1", "k0#2", "k2#1");
        assertThatThrownBy(() -> harvest.finished(List.of(2L))).isInstanceOf(StoreException.class);
        assertThat(memory.kept).as("nothing appended yet").isEmpty();
        harvest.finished(List.of(3L));
        assertThat(appended).as("the failed call's entry goes with the next call's")
                .containsExactly(Map.of(3L, 4L, 5L, 6L));
        harvest.finished(List.of(4L));
        assertThat(appended).as("each append carries only what is new").hasSize(2).last()
                .isEqualTo(Map.of(7L, 8L));
        assertThat(memory.kept).containsOnlyKeys(3L, 5L, 7L);
        assertThat(log.confirmed).as("k1#1 holds the position back").isZero();
    }

    @Test
    void messagesStreamedAgainAfterAFailureAreRecognisedThoughPositionsDoNotAscendAcrossTransactions() {
        Log log = new Log();
        // T1 writes at 10 and 11 but commits (ends at 50) after T2, which wrote at 20 and ended at 30.
        log.messages.add(new CommitStream.StreamMessage(20, 30, Instant.ofEpochSecond(30), "t2".getBytes()));
        log.messages.add(new CommitStream.StreamMessage(10, 50, Instant.ofEpochSecond(50), "t1a".getBytes()));
        log.messages.add(new CommitStream.StreamMessage(11, 50, Instant.ofEpochSecond(50), "t1b".getBytes()));
        log.position = 50;
        StreamHarvest h = harvest(log);
        ReadResult first = h.read(0, List.of(), 1);
        assertThat(values(first)).containsExactly("t2");
        log.current.failNext = new IllegalStateException("connection reset");
        assertThatThrownBy(() -> h.read(1, List.of(), 10)).isInstanceOf(StoreException.class);
        ReadResult again = h.read(1, List.of(), 10);
        assertThat(values(again)).as("T1 is not taken for a repeat of T2").containsExactly("t1a", "t1b");
        assertThat(values(h.read(0, List.of(), 10))).as("nothing twice").containsExactly("t2", "t1a", "t1b");
    }


    private static List<Long> ids(ReadResult r) {
        List<Long> ids = new ArrayList<>();
        r.rows().records().forEach(x -> ids.add(x.id()));
        r.rows().rejected().forEach(x -> ids.add(x.id()));
        ids.sort(null);
        return ids;
    }

    /**
     * Thousands of messages pending at once (more than the pending window's first ring holds, so it grows while holes
     * are in it), finished in a random order: reads return what is pending above the cursor in id order, rechecked
     * ranges what is pending below it, and the stream is confirmed up to the oldest message not finished.
     */
    @Test
    void manyMessagesFinishedInAnyOrderAreReadAndConfirmedAsTheyWouldBeOneByOne() {
        java.util.Random random = new java.util.Random(7);
        Log log = new Log();
        for (int t = 0; t < 1_500; t++) {
            log.commit("m" + (2 * t), "m" + (2 * t + 1)); // positions 3t+1, 3t+2; ends at 3t+3
        }
        StreamHarvest h = harvest(log);
        List<Long> all = new ArrayList<>();
        for (long after = 0; all.size() < 3_000; ) {
            long cursor = after;
            List<Long> read = ids(h.read(cursor, List.of(), 700));
            assertThat(read).as("read above %d", cursor).isNotEmpty().allMatch(id -> id > cursor);
            all.addAll(read);
            after = read.get(read.size() - 1);
        }
        assertThat(all).hasSize(3_000).isSorted().doesNotHaveDuplicates();
        List<Long> order = new ArrayList<>(all);
        java.util.Collections.shuffle(order, random);
        java.util.TreeSet<Long> left = new java.util.TreeSet<>(all);
        for (int i = 0; i < order.size(); i += 97) {
            List<Long> batch = order.subList(i, Math.min(order.size(), i + 97));
            h.finished(batch);
            batch.forEach(left::remove);
            assertThat(h.pendingCount()).isEqualTo(left.size());
            if (!left.isEmpty()) {
                long oldest = left.first(); // ids 2t+1 and 2t+2 are transaction t, which ends at 3t+3
                long confirmedEnd = 3 * ((oldest - 1) / 2); // the end of the transaction before the oldest's
                assertThat(log.confirmed).as("confirmed with %d the oldest pending", oldest)
                        .isEqualTo(confirmedEnd);
                long from = left.first();
                long to = Math.min(left.last(), from + 50);
                assertThat(ids(h.read(3_000, List.of(new IdRange(from, to)), 10)))
                        .as("recheck %d-%d", from, to).containsExactlyElementsOf(left.subSet(from, true, to, true));
            }
        }
        assertThat(h.pendingCount()).isZero();
        assertThat(log.confirmed).isEqualTo(4_500);
    }

    @Test
    void readsInCommitOrderAboveTheCursorAndConfirmsOnlyWhatIsFinishedWithEverythingBefore() {
        Log log = new Log();
        log.commit("a1", "a2");        // positions 1, 2; ends at 3
        log.commit("b1");              // 4; ends at 5
        log.commit("c1", "c2", "c3");  // 6, 7, 8; ends at 9
        StreamHarvest h = harvest(log);

        ReadResult first = h.read(0, List.of(), 4);
        assertThat(ids(first)).containsExactly(1L, 2L, 3L, 4L);
        assertThat(first.horizon()).isEqualTo(Long.MAX_VALUE);
        assertThat(ids(h.read(4, List.of(), 10))).containsExactly(5L, 6L);
        assertThat(ids(h.read(0, List.of(), 10))).as("a rewound cursor reads everything pending, then more")
                .containsExactly(1L, 2L, 3L, 4L, 5L, 6L);

        h.finished(List.of(3L)); // b1 done, but a's are not
        assertThat(log.confirmed).isZero();
        h.finished(List.of(2L));
        assertThat(log.confirmed).isZero();
        h.finished(List.of(1L)); // a and b finished: up to b's end
        assertThat(log.confirmed).isEqualTo(5);
        h.finished(List.of(4L, 5L)); // c1, c2 of three
        assertThat(log.confirmed).isEqualTo(5);
        h.finished(List.of(6L));
        assertThat(log.confirmed).isEqualTo(9);
        assertThat(h.pendingCount()).isZero();
    }

    @Test
    void anIdleStreamConfirmsWhereItHasReadAndAStoppedHarvestStartsAfterTheConfirmedPosition() {
        Log log = new Log();
        log.commit("a1");
        log.commit("b1");
        StreamHarvest h = harvest(log);
        assertThat(ids(h.read(0, List.of(), 10))).containsExactly(1L, 2L);
        h.finished(List.of(1L));
        assertThat(log.confirmed).isEqualTo(2);

        h.stop();
        assertThat(log.current.closed).isTrue();
        assertThat(h.pendingCount()).isZero();
        h.finished(List.of(2L)); // a late acknowledgement of the stopped stream: ignored
        assertThat(log.confirmed).isEqualTo(2);

        ReadResult again = h.read(0, List.of(), 10);
        assertThat(log.opened).isEqualTo(2);
        assertThat(again.rows().records()).singleElement().satisfies(r -> {
            assertThat(new String(r.message().value(), StandardCharsets.UTF_8)).isEqualTo("b1");
            assertThat(r.id()).as("ids are never reused").isEqualTo(3L);
        });
        h.finished(List.of(3L));
        assertThat(log.confirmed).isEqualTo(4);
        assertThat(h.read(3, List.of(), 10).size()).isZero();
    }

    @Test
    void unreadableMessagesAreRejectedAndFailedDeliveriesAreRemembered() {
        Log log = new Log();
        log.commit("a1", null);
        StreamHarvest h = harvest(log);
        ReadResult r = h.read(0, List.of(), 10);
        assertThat(r.rows().rejected()).singleElement().satisfies(x -> assertThat(x.id()).isEqualTo(2L));
        assertThat(h.pending(List.of(2L, 99L))).containsOnlyKeys(2L);

        Instant next = Instant.parse("2030-01-01T00:00:00Z");
        h.retryLater(Map.of(1L, next));
        OutboxRecord again = h.read(0, List.of(), 10).rows().records().get(0);
        assertThat(again.attempts()).isEqualTo(1);
        assertThat(again.nextAttemptAt()).isEqualTo(next);
        assertThat(h.oldestCommitTime()).contains(Instant.ofEpochSecond(3));
    }

    @Test
    void aFailedStreamIsClosedTheReadFailsAndTheNextReadOpensANewOneKeepingWhatThisHarvestHas() {
        Log log = new Log();
        log.commit("a1");   // 1, ends at 2
        log.commit("b1");   // 3, ends at 4
        StreamHarvest h = harvest(log);
        assertThat(ids(h.read(0, List.of(), 10))).containsExactly(1L, 2L);
        h.finished(List.of(1L));
        assertThat(log.confirmed).isEqualTo(2);
        log.confirmed = 0; // the failed stream never sent that confirmation
        TestStream broken = log.current;
        broken.failNext = new IllegalStateException("connection reset");
        assertThatThrownBy(() -> h.read(2, List.of(), 10)).isInstanceOf(StoreException.class)
                .hasMessageContaining("connection reset");
        assertThat(broken.closed).isTrue();
        assertThat(h.streaming()).isFalse();
        assertThat(h.pendingCount()).as("the engine still holds b1: it stays pending").isEqualTo(1);

        log.commit("c1");   // 5, ends at 6
        ReadResult again = h.read(2, List.of(), 10);
        assertThat(log.opened).isEqualTo(2);
        assertThat(log.confirmed).as("the new stream is confirmed as far as the old one was").isEqualTo(2);
        assertThat(ids(again)).as("a1 (finished) and b1 (pending as #2) are not delivered again under new ids")
                .containsExactly(3L);
        assertThat(new String(again.rows().records().get(0).message().value(), StandardCharsets.UTF_8))
                .isEqualTo("c1");
        assertThat(ids(h.read(0, List.of(), 10))).containsExactly(2L, 3L);
        h.finished(List.of(2L, 3L));
        assertThat(log.confirmed).isEqualTo(6);
    }

    @Test
    void aTransactionReturnedInPartsIsNotConfirmedBeforeItsLastPartWasRead() {
        Log log = new Log();
        log.commit("a1", "a2");   // 1, 2; ends at 3
        StreamHarvest h = harvest(log);
        assertThat(ids(h.read(0, List.of(), 1))).as("the poll returns the first part only").containsExactly(1L);
        h.finished(List.of(1L));
        assertThat(log.confirmed).as("a2 is still to come: a's end is not confirmed").isLessThan(3);

        h.stop(); // a new leader starts after the confirmed position: a2 must come again
        ReadResult again = h.read(0, List.of(), 10);
        assertThat(again.rows().records()).extracting(r -> new String(r.message().value(), StandardCharsets.UTF_8))
                .contains("a2");
    }

    @Test
    void recheckRangesReturnPendingMessagesBelowTheCursorOnce() {
        Log log = new Log();
        log.commit("a", "b", "c", "d");
        StreamHarvest h = harvest(log);
        h.read(0, List.of(), 10);
        assertThat(ids(h.read(3, List.of(new IdRange(1, 2), new IdRange(2, 3)), 10))).containsExactly(1L, 2L, 3L, 4L);
        assertThatThrownBy(() -> h.read(0, List.of(), 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0");
    }
}
