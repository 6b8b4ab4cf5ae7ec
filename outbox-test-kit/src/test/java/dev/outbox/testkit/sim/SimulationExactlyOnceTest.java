package dev.outbox.testkit.sim;

import dev.outbox.DispatcherConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Exactly-once publishing under the deterministic simulation ({@link SimulationBuilder#exactlyOnce()}): the engine
 * sends through a simulated transactional broker with a progress record ({@link SimTransactionalBroker}), and a
 * record committed twice breaks G4 as a lost one breaks G1 and one out of order G2. Random seeds over every fault, an
 * exhaustive exploration of a small configuration, and the two planted progress bugs ({@link ProgressBug}) it must
 * find, each with a minimal counterexample. Longer explorations: {@code -Doutbox.sim.seeds=10000
 * -Doutbox.sim.deviations=2} (as {@link SimulationTest}).
 */
class SimulationExactlyOnceTest {
    private static final int SEEDS = Integer.getInteger("outbox.sim.seeds", 1000);
    private static final int DEVIATIONS = Integer.getInteger("outbox.sim.deviations", 1);

    /**
     * Every fault once, exactly-once on: an aborted commit (the send failure), a commit whose answer is lost (the
     * lost acknowledgement), a store error, a change of leader, a rollback, a poison record; 2 keys x 3 records, two
     * dispatchers, storage fencing on (the stores' default), the cursor harvest.
     */
    @Test
    void randomSeedsPublishEveryRecordExactlyOnce() {
        Simulation sim = new Simulation(SimulationTest.everyFault(DispatcherConfig.Harvest.CURSOR).exactlyOnce()
                .storageFencing(true).build());
        SimRuns.randomRuns(sim, 0, SEEDS);
    }

    /**
     * The same with the mark harvest (half the seeds): an open finding, kept visible. At seed 172 a leader cut off
     * from the group has three transactions in a row time out before it requests their commits, and parks their two
     * records after its third attempt (maxAttempts 3), shortly after it was fenced: G1 ("never reached the broker (it
     * was parked)"). Not explained yet: the model's commit step may not be offered to a cut-off leader (a model
     * artifact), or the engine counts and parks failures of a leader that has lost its leadership. The engine change
     * that made the stuck-send scan rarer shifted this seed's schedule onto it. This test fails on any other failure,
     * and once the finding is fixed (then make it the plain random run again).
     */
    @Test
    void markHarvestRandomSeedsFindOnlyTheKnownParkOfACutOffLeader() {
        Simulation sim = new Simulation(SimulationTest.everyFault(DispatcherConfig.Harvest.MARK).exactlyOnce().build());
        Explorer explorer = new Explorer(sim);
        Explorer.RandomResult r = explorer.random(0, SEEDS / 2);
        assertThat(r.failed()).as("the known finding at seed 172 of %s", sim.config()).isTrue();
        Simulation.Outcome small = explorer.shrink(r.failure(), 300);
        System.out.printf("known finding (exactly-once, mark harvest), random seed %d:%n%s%n%n", r.failingSeed(),
                small.report());
        assertThat(r.failingSeed()).isEqualTo(172);
        assertThat(Explorer.kind(small)).isEqualTo("G1");
        assertThat(small.trace()).anyMatch(line -> line.contains("times out and aborts"))
                .anyMatch(line -> line.contains("never reached the broker (it was parked)"));
        Explorer.RandomResult rest = explorer.random(173, SEEDS / 2 - 173);
        if (rest.failed()) {
            throw new AssertionError("seed " + rest.failingSeed() + " failed too:\n"
                    + explorer.shrink(rest.failure(), 300).report());
        }
    }

    /** The same with leader election in the database: a lease holder's faults instead; storage fencing on. */
    @Test
    void randomSeedsPublishEveryRecordExactlyOnceWithLeasesInTheDatabase() {
        Simulation sim = new Simulation(SimulationTest.everyFault(DispatcherConfig.Harvest.CURSOR).exactlyOnce()
                .databaseElection().storageFencing(true).build());
        SimRuns.randomRuns(sim, 100_000, SEEDS / 4);
    }

    /**
     * A gap the simulation found, and its fix: with storage fencing, a leader whose purge the store refuses (its
     * epoch was taken meanwhile: at seed 770, by the paused ex-leader waking up) stands down and forgets the records
     * of that purge; when it leads again it reads their rows again and sends them through the same producer, which
     * does not create itself anew and so does not read the progress. {@code PublishedRecords.skipPublished} (and
     * {@link SimProgress}, which copies it) skipped only what the progress listed at the producer's creation, so Kafka
     * committed those records twice (G4), and in some runs a record older than its key's latest appeared again after
     * it (G2). Now it also skips what this producer itself committed and has not heard purged. Seed 770 and the seeds
     * around it pass.
     */
    @Test
    void withStorageFencingALeaderThatStoodDownDoesNotSendAgainWhatItsOwnProducerCommitted() {
        Simulation sim = new Simulation(SimulationTest.everyFault(DispatcherConfig.Harvest.CURSOR).exactlyOnce()
                .storageFencing(true).build());
        SimRuns.randomRuns(sim, 700, 300);
    }

    /**
     * Every schedule within {@code outbox.sim.deviations} (1 in the build) of the happy path: 2 keys x 1 record (2 in
     * the long exploration, with a late commit), an aborted commit, a lost commit answer, a change of leader.
     */
    @Test
    void exhaustiveSmallConfiguration() {
        Simulation sim = new Simulation(Simulation.builder().keys(2, DEVIATIONS > 1 ? 2 : 1).dispatchers(2)
                .lateCommits(DEVIATIONS > 1 ? 1 : 0).sendFailures(1)
                .lostAcks(1).leaderChanges(1).exactlyOnce().build());
        SimRuns.exhaustive(sim, DEVIATIONS);
    }

    /**
     * The configuration that finds each planted bug: one record, two dispatchers, a change of leader, and the fault
     * the bug needs — an aborted commit for the progress written outside the transaction (its entry stays visible,
     * and the next producer acknowledges the record without sending it: G1), a lost commit answer for the progress
     * read before the fence (the producer created after it reads, then fences, which completes the commit it did not
     * see: G4).
     */
    static SimulationBuilder configurationFor(ProgressBug bug) {
        return withoutThe(bug).plant(bug);
    }

    /** {@link #configurationFor} without the bug planted. */
    static SimulationBuilder withoutThe(ProgressBug bug) {
        SimulationBuilder b = Simulation.builder().keys(1, 1).dispatchers(2).leaderChanges(1).exactlyOnce();
        return bug == ProgressBug.PROGRESS_OUTSIDE_TRANSACTION ? b.sendFailures(1) : b.lostAcks(1);
    }

    @ParameterizedTest
    @EnumSource(ProgressBug.class)
    void plantedProgressBugIsFoundWithAMinimalCounterexample(ProgressBug bug) {
        Simulation sim = new Simulation(configurationFor(bug).build());
        Explorer explorer = new Explorer(sim);
        Explorer.ExhaustiveResult r = explorer.exhaustive(2, 5_000);
        assertThat(r.failed()).as("%s found in %s", bug, sim.config()).isTrue();
        Simulation.Outcome small = explorer.shrink(r.failure(), 300);
        assertThat(Explorer.kind(small)).isEqualTo(bug == ProgressBug.PROGRESS_OUTSIDE_TRANSACTION ? "G1" : "G4");
        Explorer.RandomResult random = explorer.random(0, 1_000);
        System.out.printf("planted %s, found by the exhaustive mode after %d schedules and by random seed %s (%s);"
                + " minimal counterexample (choices %s):%n%s%n%n", bug, r.schedules(), random.failingSeed(),
                sim.config(), withoutTrailingZeros(small.choices()), small.report());
        assertThat(random.failed()).as("found by random seeds too").isTrue();
        // The counterexample is the bug's: the same schedule without it keeps every guarantee.
        Simulation clean = new Simulation(withoutThe(bug).build());
        Simulation.Outcome replayed = clean.run(Chooser.script(small.choices()));
        assertThat(replayed.failed()).as("the schedule without the bug:%n%s", replayed.report()).isFalse();
    }

    @Test
    void exactlyOnceNeedsAnUnshardedTableHarvest() {
        assertThatThrownBy(() -> Simulation.builder().shards(4).exactlyOnce().build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shards 4");
        assertThatThrownBy(() -> Simulation.builder().streamHarvest().exactlyOnce().build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("stream true");
        assertThatThrownBy(() -> Simulation.builder().plant(ProgressBug.PROGRESS_READ_BEFORE_FENCE).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PROGRESS_READ_BEFORE_FENCE");
    }

    /** The choices that replay a run, without the first options at its end ({@link Chooser#script} adds them). */
    static java.util.List<Integer> withoutTrailingZeros(java.util.List<Integer> choices) {
        int end = choices.size();
        while (end > 0 && choices.get(end - 1) == 0) {
            end--;
        }
        return choices.subList(0, end);
    }
}
