package dev.outbox.testkit;

import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.StoreFencedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract every {@link LeaderTransport} passes: contenders drive the core's NELI state machine over the
 * transport exactly as the dispatcher's leader thread does, every leadership change goes into a
 * {@link LeadershipTimeline}, and the assertions are on that timeline — never two leaders at once, a fresh leader id
 * on every acquisition — and on the times a take-over took:
 * <ul>
 *   <li>one leader among three, whose heartbeats keep it leading, and a clean hand-over when it closes (twice);</li>
 *   <li>a crashed leader (gone without closing its transport) replaced once its lease or session lapsed, not
 *       before;</li>
 *   <li>a stalled leader (its transport not polled) fencing itself within its heartbeat timeout, and the next leader
 *       starting only after the stalled one's last sends could have landed;</li>
 *   <li>a paused leader (its whole loop stopped past its lease, then resumed): the next leader takes over, and the
 *       paused one's first write, fenced by the epoch it took, is refused by the store — for a transport whose
 *       acquisition fences the store ({@link Election#fencing()}).</li>
 * </ul>
 * A subclass says how to make the members of one election ({@link #newElection()}, a fresh one per test) and what its
 * timings promise ({@link #timings()}); a dozen lines per transport.
 *
 * <p>Each test runs its contenders on threads of their own and closes them; not for parallel execution within one
 * class.
 */
public abstract class LeaderTransportContract {
    private LeadershipTimeline timeline = new LeadershipTimeline();
    private final List<LeaderContender> contenders = new ArrayList<>();
    private Election election;

    /** A contract run; subclasses add their election. */
    protected LeaderTransportContract() {
    }

    /** The members of one election: one outbox's leader transports, and how its leaders are fenced. */
    public interface Election {
        /**
         * A new member's transport, not started.
         *
         * @param name the contender's name, for diagnostics (client ids, connection names)
         * @return a transport of this election
         */
        LeaderTransport member(String name);

        /**
         * The storage fencing of the outbox this election leads, if a member's acquisition fences deposed leaders'
         * writes in the store; null if not (the paused-leader test then only checks the take-over).
         *
         * @return the store's fencing, or null
         */
        StorageFencing fencing();

        /**
         * Drops {@code transport} as a killed process would: without leaving the election. The default does nothing
         * (a transport that holds no resource of its own is simply never polled again).
         *
         * @param transport a member's transport, no longer polled
         */
        default void abandon(LeaderTransport transport) {
        }
    }

    /**
     * The timings a run uses and what they promise.
     *
     * @param heartbeatTimeout     the heartbeat timeout the contenders' state machines use (the transport must be
     *                             built for it)
     * @param pollInterval         how long each poll waits, and the heartbeat interval
     * @param deliveryTimeout      the broker's delivery timeout the transport was built for: a new leader starts no
     *                             sooner than this after the old one fenced itself
     * @param crashTakeOverAtLeast a crashed leader is replaced no sooner than this
     * @param crashTakeOverAtMost  ... and no later than this
     * @param cleanHandOverAtMost  a closed leader is replaced within this
     */
    public record Timings(Duration heartbeatTimeout, Duration pollInterval, Duration deliveryTimeout,
                          Duration crashTakeOverAtLeast, Duration crashTakeOverAtMost, Duration cleanHandOverAtMost) {
        /**
         * Checks that no component is null.
         *
         * @param heartbeatTimeout     the heartbeat timeout
         * @param pollInterval         the poll interval
         * @param deliveryTimeout      the delivery timeout
         * @param crashTakeOverAtLeast the shortest crash take-over
         * @param crashTakeOverAtMost  the longest crash take-over
         * @param cleanHandOverAtMost  the longest clean hand-over
         * @throws NullPointerException if a component is null
         */
        public Timings {
            Objects.requireNonNull(heartbeatTimeout, "heartbeatTimeout");
            Objects.requireNonNull(pollInterval, "pollInterval");
            Objects.requireNonNull(deliveryTimeout, "deliveryTimeout");
            Objects.requireNonNull(crashTakeOverAtLeast, "crashTakeOverAtLeast");
            Objects.requireNonNull(crashTakeOverAtMost, "crashTakeOverAtMost");
            Objects.requireNonNull(cleanHandOverAtMost, "cleanHandOverAtMost");
        }
    }

    /**
     * A new election, fresh for one test (its own lease row, leader topic or group).
     *
     * @return the election
     */
    protected abstract Election newElection();

    /**
     * The timings this run's transports were built for.
     *
     * @return the timings
     */
    protected abstract Timings timings();

    /**
     * Closes the contenders, prints the timeline and fails on a contender's failure.
     *
     * @param info the test, for the printed timeline
     */
    @AfterEach
    final void stopContenders(TestInfo info) {
        for (LeaderContender c : contenders) {
            c.close();
        }
        System.out.println(info.getDisplayName() + " timeline:\n" + timeline);
        List<LeaderContender> ran = List.copyOf(contenders);
        contenders.clear(); // a subclass may run all tests on one instance
        timeline = new LeadershipTimeline();
        for (LeaderContender c : ran) {
            assertThat(c.failure()).as("contender %s failed", c.name).isNull();
        }
    }

    private List<LeaderContender> contenders(int n) {
        election = newElection();
        List<LeaderContender> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String name = "c" + i;
            LeaderContender c = new LeaderContender(name, election.member(name), timeline,
                    timings().heartbeatTimeout(), timings().pollInterval(), election.fencing(), election::abandon);
            contenders.add(c);
            list.add(c.start());
        }
        return list;
    }

    private LeaderContender awaitSingleLeader(List<LeaderContender> among, Duration timeout) {
        Await.untilOrFail(() -> among.stream().filter(LeaderContender::isLeader).count() == 1, timeout,
                () -> "a single leader among " + among + "\n" + timeline);
        return among.stream().filter(LeaderContender::isLeader).findFirst().orElseThrow();
    }

    private Duration firstElection() {
        return timings().crashTakeOverAtMost().multipliedBy(2).plusSeconds(10);
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    /** One leader among three; its heartbeats keep it leading; each leader that closes is replaced at once. */
    @Test
    void oneLeaderAmongThreeAndACleanHandOverWhenTheLeaderCloses() {
        List<LeaderContender> all = contenders(3);
        LeaderContender first = awaitSingleLeader(all, firstElection());
        long seen = first.ownHeartbeatsSeen();
        long span = 3 * timings().heartbeatTimeout().toNanos();
        long from = System.nanoTime();
        // Its heartbeats keep coming back for three heartbeat timeouts: no fence.
        Await.untilOrFail(() -> System.nanoTime() - from > span && first.ownHeartbeatsSeen() > seen + 3,
                timings().heartbeatTimeout().multipliedBy(6), () -> "the leader keeps hearing its heartbeats");
        assertThat(timeline.count(e -> e.kind() == LeadershipTimeline.Kind.FENCED)).as("fences in\n%s", timeline)
                .isZero();
        assertThat(all.stream().filter(LeaderContender::isLeader)).containsExactly(first);

        List<LeaderContender> rest = new ArrayList<>(all);
        List<Long> handOvers = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            LeaderContender leader = rest.stream().filter(LeaderContender::isLeader).findFirst().orElseThrow();
            rest.remove(leader);
            long closing = System.nanoTime();
            leader.close();
            LeaderContender next = awaitSingleLeader(rest, timings().cleanHandOverAtMost().plusSeconds(30));
            LeadershipTimeline.Event acquired = timeline.first(closing,
                    e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED && e.who().equals(next.name));
            handOvers.add(millis(acquired.nanos() - closing));
        }
        System.out.println("clean hand-over after the leader closed: " + handOvers + " ms (promised at most "
                + timings().cleanHandOverAtMost().toMillis() + " ms)");
        for (long t : handOvers) {
            assertThat(t).isLessThanOrEqualTo(timings().cleanHandOverAtMost().toMillis());
        }
        timeline.assertExclusive();
    }

    /** A leader that dies without leaving is replaced once its lease or session lapsed: not before, not much after. */
    @Test
    void crashedLeaderIsReplacedOnceItsLeaseLapses() {
        List<LeaderContender> all = contenders(2);
        LeaderContender leader = awaitSingleLeader(all, firstElection());
        LeaderContender other = all.get(0) == leader ? all.get(1) : all.get(0);
        long crashed = System.nanoTime();
        leader.crash();
        awaitSingleLeader(List.of(other), timings().crashTakeOverAtMost().plusSeconds(30));
        LeadershipTimeline.Event acquired = timeline.first(crashed,
                e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED && e.who().equals(other.name));
        long takeOver = millis(acquired.nanos() - crashed);
        System.out.println("take-over after a crash: " + takeOver + " ms (promised between "
                + timings().crashTakeOverAtLeast().toMillis() + " and " + timings().crashTakeOverAtMost().toMillis()
                + " ms)");
        assertThat(takeOver).isGreaterThanOrEqualTo(timings().crashTakeOverAtLeast().toMillis());
        assertThat(takeOver).isLessThanOrEqualTo(timings().crashTakeOverAtMost().toMillis());
        timeline.assertExclusive();
    }

    /**
     * A leader whose transport is no longer polled fences itself within its heartbeat timeout; another leads only
     * once the stalled leader's last sends could have landed; polled again, the ex-leader stays a standby.
     */
    @Test
    void stalledLeaderFencesItselfBeforeAnotherAcquires() {
        List<LeaderContender> all = contenders(3);
        LeaderContender leader = awaitSingleLeader(all, firstElection());
        UUID firstId = leader.leaderId();
        List<LeaderContender> others = new ArrayList<>(all);
        others.remove(leader);

        long stalled = System.nanoTime();
        leader.stall(true);
        LeaderContender next = awaitSingleLeader(others, timings().crashTakeOverAtMost().plusSeconds(30));
        LeadershipTimeline.Event fenced = timeline.first(stalled,
                e -> e.who().equals(leader.name) && e.kind() == LeadershipTimeline.Kind.FENCED);
        LeadershipTimeline.Event acquired = timeline.first(stalled,
                e -> e.who().equals(next.name) && e.kind() == LeadershipTimeline.Kind.ACQUIRED);
        assertThat(fenced).as("the stalled leader fenced itself\n%s", timeline).isNotNull();
        long fencedAfter = millis(fenced.nanos() - stalled);
        System.out.println("stalled leader fenced after " + fencedAfter + " ms; next leader acquired after "
                + millis(acquired.nanos() - stalled) + " ms");
        assertThat(fencedAfter).isLessThanOrEqualTo(timings().heartbeatTimeout().plus(timings().pollInterval()
                .multipliedBy(3)).toMillis());
        assertThat(acquired.nanos() - fenced.nanos()).as("from the fence to the next acquisition\n%s", timeline)
                .isGreaterThan(timings().deliveryTimeout().toNanos());

        leader.stall(false);
        long rejoined = System.nanoTime();
        long seenByNext = next.ownHeartbeatsSeen();
        Await.untilOrFail(() -> next.ownHeartbeatsSeen() >= seenByNext + 5
                        && System.nanoTime() - rejoined > 2 * timings().heartbeatTimeout().toNanos(),
                timings().heartbeatTimeout().multipliedBy(10), () -> "the new leader keeps hearing its heartbeats");
        assertThat(next.isLeader()).isTrue();
        assertThat(leader.isLeader()).isFalse();
        assertThat(timeline.first(rejoined, e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED)).isNull();
        assertThat(timeline.events()).filteredOn(e -> firstId.equals(e.leaderId())).hasSize(1);
        timeline.assertExclusive();
    }

    /**
     * A leader paused past its lease (its whole loop stopped, as by SIGSTOP) is replaced, and once resumed its lease
     * has lapsed (it would not send) and its first write, fenced by the epoch it took, is refused by the store.
     */
    @Test
    void pausedLeaderIsReplacedAndItsWritesAreRefused() {
        List<LeaderContender> all = contenders(2);
        LeaderContender leader = awaitSingleLeader(all, firstElection());
        LeaderContender other = all.get(0) == leader ? all.get(1) : all.get(0);
        StorageFencing fencing = election.fencing();
        if (fencing != null) {
            leader.fencedWrite(); // accepted while it leads: the refusal below is the take-over's doing
        }
        leader.pause();
        long pausedAt = System.nanoTime();
        long leaseEnd = pausedAt + leader.leaseLeftNanos(pausedAt);
        awaitSingleLeader(List.of(other), timings().crashTakeOverAtMost().plusSeconds(30));
        LeadershipTimeline.Event acquired = timeline.first(pausedAt,
                e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED && e.who().equals(other.name));
        System.out.println("paused leader replaced after " + millis(acquired.nanos() - pausedAt) + " ms (its own"
                + " lease ran out " + millis(leaseEnd - pausedAt) + " ms after the pause)");
        assertThat(acquired.nanos() - leaseEnd).as("the next leader starts after the paused leader's lease ended"
                + " and its sends could have landed\n%s", timeline).isGreaterThan(timings().deliveryTimeout().toNanos());

        AtomicReference<Object> firstWrite = new AtomicReference<>();
        AtomicReference<Long> leaseLeftOnResume = new AtomicReference<>();
        leader.resume(() -> {
            long left = leader.leaseLeftNanos(System.nanoTime());
            if (fencing != null) {
                try {
                    leader.fencedWrite();
                    firstWrite.set("accepted");
                } catch (StoreFencedException e) {
                    firstWrite.set(e);
                }
            }
            leaseLeftOnResume.set(left); // last: the test reads both once this is set
        });
        Await.untilOrFail(() -> leaseLeftOnResume.get() != null, Duration.ofSeconds(10), () -> "the leader resumes");
        assertThat(leaseLeftOnResume.get()).as("the resumed leader's lease had lapsed: it would not send").isNegative();
        if (fencing != null) {
            assertThat(firstWrite.get()).as("the resumed leader's first fenced write")
                    .isInstanceOf(StoreFencedException.class);
        }
        Await.untilOrFail(() -> !leader.isLeader(), timings().heartbeatTimeout().multipliedBy(3),
                () -> "the resumed leader steps down\n" + timeline);
        long resumed = System.nanoTime();
        Await.untilOrFail(() -> System.nanoTime() - resumed > 2 * timings().heartbeatTimeout().toNanos(),
                timings().heartbeatTimeout().multipliedBy(3), () -> "time passes");
        assertThat(other.isLeader()).isTrue();
        assertThat(timeline.first(resumed, e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED)).isNull();
    }
}
