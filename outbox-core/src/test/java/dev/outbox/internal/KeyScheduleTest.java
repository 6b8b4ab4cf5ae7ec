package dev.outbox.internal;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link KeySchedule} driven without threads, on a hand-moved clock and fixed jitter. */
class KeyScheduleTest {
    private static final Duration FIRST = Duration.ofMillis(100);
    private static final Duration MAX = Duration.ofSeconds(1);
    private static final int MAX_ATTEMPTS = 3;

    private final NeliStateMachineTest.MutableClock clock = new NeliStateMachineTest.MutableClock();
    private double jitter = 0.5;
    private KeySchedule schedule;

    @BeforeEach
    void setUp() {
        schedule = new KeySchedule(10, FIRST, MAX, MAX_ATTEMPTS, clock, () -> jitter);
        schedule.start();
    }

    private static OutboxRecord record(long id, String key) {
        return new OutboxRecord(id, Instant.EPOCH, OutboxMessage.of("t", key, new byte[]{1}), 0, UUID.randomUUID(),
                null);
    }

    private List<Flight> take() {
        return schedule.takeReady(Integer.MAX_VALUE, 0);
    }

    private static List<Long> ids(List<Flight> flights) {
        List<Long> out = new ArrayList<>();
        for (Flight f : flights) {
            out.add(f.record().id());
        }
        return out;
    }

    @Test
    void holdingAfterAParkKeepsOnlyThatKeyBackAndAReadOfParkedKeysBegunBeforeTheParkDoesNotReleaseIt() {
        schedule.holdKeysAfterPark(true);
        schedule.offer(record(1, "poison"));
        schedule.offer(record(2, "poison"));
        schedule.offer(record(3, "other"));
        List<Flight> flights = take();
        assertThat(ids(flights)).containsExactly(1L, 3L);
        long started = schedule.parkedKeysReadStarted(); // a read of the store's parked keys, before the park
        schedule.parked(flights.get(0));
        assertThat(schedule.isHeld("poison")).isTrue();
        assertThat(schedule.queued()).as("the held key's queued record was dropped").isZero();
        schedule.acknowledged(flights.get(1));
        assertThat(schedule.offer(record(4, "poison"))).as("nothing of a held key is queued").isFalse();
        assertThat(schedule.offer(record(5, "other"))).isTrue();
        assertThat(ids(take())).containsExactly(5L);

        assertThat(schedule.parkedKeysRead(java.util.Set.of(), started)).as("the read predates the park").isEmpty();
        assertThat(schedule.heldKeys()).isEqualTo(1);
        assertThat(schedule.parkedKeysRead(java.util.Set.of("parked-elsewhere"), schedule.parkedKeysReadStarted()))
                .as("no longer parked: released").containsExactly("poison");
        assertThat(schedule.isHeld("parked-elsewhere")).as("a key the store lists is held").isTrue();
        abandonKeepsHolds();
    }

    private void abandonKeepsHolds() {
        schedule.abandon();
        assertThat(schedule.isHeld("parked-elsewhere")).isTrue();
        assertThat(schedule.offer(record(6, "poison"))).as("released: queued again").isTrue();
        schedule.stop();
        assertThat(schedule.heldKeys()).as("only a leader holds").isZero();
    }

    @Test
    void anOutageIsNeverCountedNorParkedAndItsSharedBackoffGrowsOncePerFirstBackoffUntilAnAcknowledgement() {
        for (long id = 1; id <= 4; id++) {
            schedule.offer(record(id, "k" + id));
        }
        List<Flight> flights = take();
        Verdict first = schedule.outage(flights.get(0));
        Verdict sameRound = schedule.outage(flights.get(1));
        assertThat(first.outage()).isTrue();
        assertThat(first.park()).isFalse();
        assertThat(first.attempts()).as("not counted").isZero();
        assertThat(Duration.between(clock.instant(), first.nextAttemptAt())).as("first backoff, half jitter")
                .isEqualTo(Duration.ofMillis(75));
        assertThat(sameRound.nextAttemptAt()).as("records failing together share one step")
                .isEqualTo(first.nextAttemptAt());
        assertThat(schedule.inOutage()).isTrue();
        schedule.heldByOutage(flights.get(0), first.nextAttemptAt());
        schedule.heldByOutage(flights.get(1), sameRound.nextAttemptAt());

        for (int i = 0; i < MAX_ATTEMPTS * 3; i++) { // far more failures than maxAttempts
            clock.advance(MAX);
            List<Flight> again = take();
            assertThat(ids(again)).containsExactly(1L, 2L);
            for (Flight f : again) {
                Verdict v = schedule.outage(f);
                assertThat(v.park()).isFalse();
                assertThat(Duration.between(clock.instant(), v.nextAttemptAt())).isLessThanOrEqualTo(MAX);
                schedule.heldByOutage(f, v.nextAttemptAt());
            }
        }
        schedule.acknowledged(flights.get(2));
        assertThat(schedule.inOutage()).as("an acknowledgement ends it").isFalse();
        clock.advance(MAX);
        Flight held = take().get(0);
        assertThat(held.record().attempts()).as("still never counted").isZero();
        assertThat(Duration.between(clock.instant(), schedule.outage(held).nextAttemptAt()))
                .as("the backoff starts over").isEqualTo(Duration.ofMillis(75));
    }

    @Test
    void oneRecordPerKeyInFlightAndTheNextOnlyAfterAcknowledgement() {
        schedule.offer(record(1, "a"));
        schedule.offer(record(2, "b"));
        schedule.offer(record(3, "a"));
        List<Flight> first = take();
        assertThat(ids(first)).containsExactly(1L, 2L);
        assertThat(take()).isEmpty();
        assertThat(schedule.inFlight()).isEqualTo(2);
        assertThat(schedule.queued()).isEqualTo(1);
        assertThat(schedule.room()).isEqualTo(10 - 3);

        schedule.acknowledged(first.get(1)); // b: nothing behind it
        assertThat(take()).isEmpty();
        schedule.acknowledged(first.get(0));
        assertThat(ids(take())).containsExactly(3L);
    }

    @Test
    void neverPutsMoreInFlightThanTheLimit() {
        for (int i = 1; i <= 10; i++) {
            schedule.offer(record(i, "k" + i));
        }
        assertThat(schedule.takeReady(4, 0)).hasSize(4);
        assertThat(take()).hasSize(6);
        assertThat(schedule.room()).isZero();
        assertThat(schedule.offer(record(11, "k11"))).isTrue(); // room is advisory; takeReady enforces the limit
        assertThat(take()).isEmpty();
    }

    @Test
    void aFailedRecordHoldsOnlyItsKeyUntilItsBackoffHasPassed() {
        schedule.offer(record(1, "poison"));
        schedule.offer(record(2, "healthy"));
        schedule.offer(record(3, "poison"));
        List<Flight> flights = take();
        Flight poison = flights.get(0);

        Verdict v = schedule.failure(poison, false);
        assertThat(v.park()).isFalse();
        assertThat(v.attempts()).isEqualTo(1);
        // first backoff 100 ms, jitter 0.5: 50 ms + 25 ms
        assertThat(v.nextAttemptAt()).isEqualTo(clock.instant().plusMillis(75));
        schedule.retryLater(poison, v.nextAttemptAt());
        schedule.acknowledged(flights.get(1));

        schedule.offer(record(4, "healthy"));
        assertThat(ids(take())).containsExactly(4L); // the healthy key flows; poison's 3 waits behind 1
        assertThat(schedule.nextDue()).isEqualTo(v.nextAttemptAt());

        clock.advance(Duration.ofMillis(74));
        assertThat(take()).isEmpty();
        clock.advance(Duration.ofMillis(1));
        List<Flight> retry = take();
        assertThat(ids(retry)).containsExactly(1L);
        assertThat(retry.get(0).record().attempts()).isEqualTo(1);
        assertThat(schedule.nextDue()).isNull();

        schedule.acknowledged(retry.get(0));
        assertThat(ids(take())).containsExactly(3L);
    }

    @Test
    void backoffDoublesPerAttemptUpToTheMaximumWithEqualJitter() {
        jitter = 0;
        assertThat(schedule.backoff(1)).isEqualTo(Duration.ofMillis(50));
        assertThat(schedule.backoff(2)).isEqualTo(Duration.ofMillis(100));
        assertThat(schedule.backoff(3)).isEqualTo(Duration.ofMillis(200));
        assertThat(schedule.backoff(30)).isEqualTo(Duration.ofMillis(500));
        jitter = 0.999_999;
        assertThat(schedule.backoff(30)).isBetween(Duration.ofMillis(999), MAX);
    }

    @Test
    void parksAfterMaxAttemptsAndTheKeyMovesOn() {
        schedule.offer(record(1, "k"));
        schedule.offer(record(2, "k"));
        for (int attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
            Flight f = take().get(0);
            assertThat(f.record().id()).isEqualTo(1L);
            Verdict v = schedule.failure(f, false);
            assertThat(v.park()).isFalse();
            schedule.retryLater(f, v.nextAttemptAt());
            clock.advance(MAX);
        }
        Flight last = take().get(0);
        Verdict v = schedule.failure(last, false);
        assertThat(v.park()).isTrue();
        assertThat(v.attempts()).isEqualTo(MAX_ATTEMPTS);
        schedule.parked(last);
        assertThat(ids(take())).containsExactly(2L);
    }

    @Test
    void aPermanentFailureParksAtOnce() {
        schedule.offer(record(1, "k"));
        Verdict v = schedule.failure(take().get(0), true);
        assertThat(v.park()).isTrue();
        assertThat(v.attempts()).isEqualTo(1);
        assertThat(v.nextAttemptAt()).isNull();
    }

    @Test
    void aRecordReadWithANextAttemptTimeWaitsForIt() {
        Instant later = clock.instant().plusSeconds(2);
        OutboxRecord r = record(1, "k").failedOnce(later);
        schedule.offer(r);
        schedule.offer(record(2, "other"));
        assertThat(ids(take())).containsExactly(2L);
        assertThat(schedule.nextDue()).isEqualTo(later);
        clock.advance(Duration.ofSeconds(2));
        assertThat(ids(take())).containsExactly(1L);
    }

    @Test
    void aRecordInFlightOrQueuedIsNotQueuedTwice() {
        OutboxRecord r1 = record(1, "k");
        schedule.offer(r1);
        Flight f = take().get(0);
        assertThat(schedule.offer(r1)).isFalse(); // read again under a fresh leader id while in flight
        OutboxRecord r2 = record(2, "k");
        assertThat(schedule.offer(r2)).isTrue();
        assertThat(schedule.offer(r2)).isFalse();
        schedule.acknowledged(f);
        assertThat(ids(take())).containsExactly(2L);
    }

    @Test
    void aRecordAcknowledgedWhileAReadWasUnderWayIsNotQueuedByThatRead() {
        OutboxRecord r1 = record(1, "k");
        schedule.offer(r1);
        Flight f = take().get(0);
        schedule.abandon();
        schedule.readStarted();
        schedule.acknowledged(f); // its row was deleted after the read returned it
        assertThat(schedule.offer(r1)).isFalse();
        schedule.readEnded();
        assertThat(take()).isEmpty();
        assertThat(schedule.offer(r1)).isTrue(); // a later read could only see it if it were still there
    }

    @Test
    void aFailedRecordReturningAfterARewindGoesBackToTheHeadOfItsKey() {
        schedule.offer(record(1, "k"));
        Flight f = take().get(0);
        schedule.abandon();                 // a rewind: the mark reads from the head again
        schedule.offer(record(1, "k"));     // in flight: skipped
        schedule.offer(record(2, "k"));
        Verdict v = schedule.failure(f, false);
        schedule.retryLater(f, v.nextAttemptAt());
        assertThat(take()).isEmpty();
        clock.advance(MAX);
        assertThat(ids(take())).containsExactly(1L);
    }

    @Test
    void aFailedRecordRetriedBeforeTheRewindsReadIsNotQueuedTwice() {
        schedule.offer(record(1, "k"));
        Flight f = take().get(0);
        schedule.abandon();
        Verdict v = schedule.failure(f, false);
        schedule.retryLater(f, v.nextAttemptAt());
        assertThat(schedule.offer(record(1, "k"))).isFalse();
        assertThat(schedule.queued()).isEqualTo(1);
    }

    @Test
    void stoppedScheduleQueuesNothingAndLetsFailedRecordsGo() {
        schedule.offer(record(1, "k"));
        Flight f = take().get(0);
        schedule.stop();
        assertThat(schedule.offer(record(2, "k"))).isFalse();
        schedule.retryLater(f, clock.instant());
        assertThat(schedule.inFlight()).isZero();
        assertThat(schedule.queued()).isZero();
        schedule.start();
        assertThat(schedule.offer(record(1, "k"))).isTrue();
    }

    @Test
    void unsentRecordsLeaveFlight() {
        schedule.offer(record(1, "k"));
        Flight f = take().get(0);
        schedule.abandon();
        schedule.unsent(f);
        assertThat(schedule.inFlight()).isZero();
        assertThat(schedule.flights()).isEmpty();
        schedule.offer(record(1, "k"));
        assertThat(ids(take())).containsExactly(1L);
    }

    // ------------------------------------------------------------------------------------------ bytes

    private static OutboxRecord sized(long id, String key, int valueBytes) {
        return new OutboxRecord(id, Instant.EPOCH, OutboxMessage.of("t", key, new byte[valueBytes]), 0,
                UUID.randomUUID(), null);
    }

    /** One read of the table, as the dispatcher does it. */
    private void read(OutboxRecord... records) {
        schedule.readStarted();
        for (OutboxRecord r : records) {
            schedule.offer(r);
        }
        schedule.readEnded();
    }

    private KeySchedule bytesBounded(int maxInFlight, long maxBytes) {
        KeySchedule s = new KeySchedule(maxInFlight, maxBytes, FIRST, MAX, MAX_ATTEMPTS, clock, () -> jitter);
        s.start();
        return s;
    }

    @Test
    void aRecordsSizeIsItsValueKeyAndHeaders() {
        OutboxMessage m = OutboxMessage.builder("topic-not-counted", "key").value(new byte[100])
                .header("h1", new byte[10]).header("h2", (byte[]) null).build();
        assertThat(KeySchedule.size(new OutboxRecord(1, Instant.EPOCH, m, 0, UUID.randomUUID(), null)))
                .isEqualTo(100 + 3 + 2 + 10 + 2);
        assertThat(KeySchedule.size(new OutboxRecord(2, Instant.EPOCH, OutboxMessage.tombstone("t", "k"), 0,
                UUID.randomUUID(), null))).isEqualTo(1);
    }

    @Test
    void readingStopsOnceTheBytesQueuedAndInFlightReachTheBound() {
        schedule = bytesBounded(100, 10_000);
        assertThat(schedule.room()).as("the size is unknown: one row teaches it").isEqualTo(1);
        assertThat(schedule.readThreshold(50)).isEqualTo(1);

        read(sized(1, "a", 2_999)); // 3,000 bytes with its key
        assertThat(schedule.sizeEstimate()).isEqualTo(3_000);
        assertThat(schedule.bytes()).isEqualTo(3_000);
        assertThat(schedule.room()).as("7,000 bytes free hold two more rows of 3,000").isEqualTo(2);
        assertThat(schedule.readThreshold(50)).as("the bound holds 3 such rows: read once 1 fits").isEqualTo(1);

        read(sized(2, "b", 2_999), sized(3, "c", 2_999));
        assertThat(schedule.bytes()).isEqualTo(9_000);
        assertThat(schedule.room()).as("1,000 bytes free hold no row of 3,000").isZero();

        List<Flight> flights = take();
        assertThat(flights).hasSize(3);
        assertThat(schedule.bytes()).as("sending moves bytes from queued to in flight").isEqualTo(9_000);
        assertThat(schedule.room()).isZero();

        schedule.acknowledged(flights.get(0));
        assertThat(schedule.bytes()).isEqualTo(6_000);
        assertThat(schedule.room()).isEqualTo(1);
        schedule.acknowledged(flights.get(1));
        schedule.acknowledged(flights.get(2));
        assertThat(schedule.bytes()).isZero();
        assertThat(schedule.room()).isEqualTo(3);
    }

    @Test
    void smallRecordsAreBoundedByTheirCountAsBefore() {
        schedule = bytesBounded(10, 1 << 20);
        read(sized(1, "a", 99));
        assertThat(schedule.room()).isEqualTo(9);
        assertThat(schedule.readThreshold(5)).isEqualTo(5);
    }

    @Test
    void aRecordLargerThanTheBoundGoesAloneSoNothingStalls() {
        schedule = bytesBounded(100, 1_000);
        read(sized(1, "a", 4_999), sized(2, "b", 4_999)); // the first read knew no size: it overshoots
        assertThat(schedule.room()).isZero();
        assertThat(schedule.readThreshold(50)).isEqualTo(1);
        List<Flight> flights = take();
        schedule.acknowledged(flights.get(0));
        assertThat(schedule.room()).as("one still in flight").isZero();
        schedule.acknowledged(flights.get(1));

        assertThat(schedule.room()).as("nothing queued or in flight: one row, however large").isEqualTo(1);
        read(sized(3, "a", 4_999));
        assertThat(schedule.room()).isZero();
        Flight alone = take().get(0);
        assertThat(schedule.room()).isZero();
        schedule.acknowledged(alone);
        assertThat(schedule.room()).isEqualTo(1);
    }

    @Test
    void aReadOfRowsLargerThanTheLastOvershootsByThatReadOnly() {
        schedule = bytesBounded(100, 10_000);
        read(sized(1, "a", 99));
        assertThat(schedule.room()).as("9,900 bytes free hold 99 rows of 100").isEqualTo(99);
        OutboxRecord[] grown = new OutboxRecord[5];
        for (int i = 0; i < grown.length; i++) {
            grown[i] = sized(10 + i, "k" + i, 4_998); // 5,000 bytes
        }
        read(grown); // the store returned 5 of the 99 rows asked for, each 50 times the estimate
        assertThat(schedule.bytes()).isEqualTo(25_100);
        assertThat(schedule.room()).as("no further read until the bytes fall below the bound").isZero();
        assertThat(schedule.sizeEstimate()).isEqualTo(5_000);
        List<Flight> flights = take();
        for (Flight f : flights) {
            schedule.acknowledged(f);
        }
        assertThat(schedule.room()).as("the next read asks for rows at the new size").isEqualTo(2);
    }

    @Test
    void bytesFollowRetriesOutagesCopiesAndAbandonment() {
        schedule = bytesBounded(100, 1 << 20);
        read(sized(1, "a", 9), sized(2, "b", 9), sized(3, "a", 9));
        assertThat(schedule.bytes()).isEqualTo(30);
        List<Flight> flights = take(); // 1 and 2
        Verdict v = schedule.failure(flights.get(0), false);
        schedule.retryLater(flights.get(0), v.nextAttemptAt());
        assertThat(schedule.bytes()).as("back at the head of its key, counted once").isEqualTo(30);
        read(sized(1, "a", 9), sized(2, "b", 9), sized(3, "a", 9)); // a rescan: nothing is counted twice
        assertThat(schedule.bytes()).isEqualTo(30);
        schedule.acknowledged(flights.get(1));
        assertThat(schedule.bytes()).isEqualTo(20);

        clock.advance(MAX);
        Flight retried = take().get(0);
        Verdict outage = schedule.outage(retried);
        schedule.heldByOutage(retried, outage.nextAttemptAt());
        assertThat(schedule.bytes()).isEqualTo(20);

        clock.advance(MAX);
        Flight again = take().get(0);
        schedule.abandon();
        assertThat(schedule.bytes()).as("the queued record is forgotten, the one in flight stays").isEqualTo(10);
        schedule.unsent(again);
        assertThat(schedule.bytes()).isZero();
        assertThat(schedule.queued()).isZero();
    }
}
