package dev.outbox.testkit.sim;

import dev.outbox.DispatcherConfig;
import dev.outbox.testkit.StoreFaults;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine under the deterministic simulation: random seeds over every fault, an exhaustive (delay-bounded)
 * exploration of a small configuration, the planted bugs it must find, and exact replay. Longer explorations:
 * {@code -Doutbox.sim.seeds=10000 -Doutbox.sim.deviations=2} (see the README's "How we test").
 */
class SimulationTest {
    private static final int SEEDS = Integer.getInteger("outbox.sim.seeds", 1000);
    private static final int DEVIATIONS = Integer.getInteger("outbox.sim.deviations", 1);

    /** 2 keys x 3 records, two dispatchers, every kind of fault once, a poison record. */
    static SimulationBuilder everyFault(DispatcherConfig.Harvest harvest) {
        return Simulation.builder().harvest(harvest).keys(2, 3).dispatchers(2).sendFailures(1).lostAcks(1)
                .storeErrors(1).leaderChanges(1).rollbacks(1).poison(true);
    }

    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest
    @EnumSource(DispatcherConfig.Harvest.class)
    void randomSeedsKeepEveryGuarantee(DispatcherConfig.Harvest harvest) {
        Simulation sim = new Simulation(everyFault(harvest).build());
        SimRuns.randomRuns(sim, 0, SEEDS);
    }

    /**
     * The stream harvest (the engine's {@code StreamHarvest}, as it harvests the Postgres WAL store, over an
     * in-memory commit log with one replication slot and the ledger), 2 keys x 3 records, two dispatchers, every
     * fault once: a send failure, a lost acknowledgement, a store error (a lost stream, after its last status update,
     * or a failed, lost or refused ledger append or park), a change of leader, a rollback, a poison record.
     */
    static SimulationBuilder everyFaultOfTheStreamHarvest() {
        return Simulation.builder().streamHarvest().keys(2, 3).dispatchers(2).sendFailures(1).lostAcks(1)
                .storeErrors(1).leaderChanges(1).rollbacks(1).poison(true);
    }

    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void randomSeedsKeepEveryGuaranteeWithTheStreamHarvest() {
        Simulation sim = new Simulation(everyFaultOfTheStreamHarvest().build());
        SimRuns.randomRuns(sim, 0, SEEDS);
    }

    /**
     * The stream harvest's exhaustive runs: in every build, K = 1 of the table harvest's configuration (2 keys x 3
     * records, one late commit, one send failure, one change of leader); the long exploration adds K = 2 of it and
     * of a lost replication connection in place of the change of leader. (Before the ledger, K = 2 of the first found
     * the re-run of the test below at schedule 4,839.)
     */
    static List<Arguments> streamExhaustiveRuns() {
        List<Arguments> runs = new java.util.ArrayList<>();
        runs.add(Arguments.of(1, Simulation.builder().streamHarvest().keys(2, 3).dispatchers(2).lateCommits(1)
                .sendFailures(1).leaderChanges(1).build()));
        if (DEVIATIONS > 1) {
            runs.add(Arguments.of(DEVIATIONS, Simulation.builder().streamHarvest().keys(2, 3).dispatchers(2)
                    .lateCommits(1).sendFailures(1).leaderChanges(1).build()));
            runs.add(Arguments.of(DEVIATIONS, Simulation.builder().streamHarvest().keys(2, 3).dispatchers(2)
                    .lateCommits(1).sendFailures(1).storeErrors(1, StoreFaults.Operation.READ).build()));
        }
        return runs;
    }

    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest
    @MethodSource("streamExhaustiveRuns")
    void exhaustiveSmallConfigurationWithTheStreamHarvest(int deviations, SimulationConfig config) {
        Simulation sim = new Simulation(config);
        SimRuns.exhaustive(sim, deviations);
    }

    /**
     * A planted bug in the stream (the test kit's, not the engine's StreamHarvest): the stream is confirmed up to what a poll
     * returned, before the engine finished it. After a leader change the new leader starts past records the old
     * one never delivered: G1.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aStreamConfirmedOnReadIsFoundByTheExhaustiveMode() {
        Simulation sim = new Simulation(Simulation.builder().streamHarvest().keys(1, 2).dispatchers(2)
                .leaderChanges(1).plantConfirmOnRead().build());
        Explorer explorer = new Explorer(sim);
        Explorer.ExhaustiveResult r = explorer.exhaustive(2, 5_000);
        assertThat(r.failed()).as("found in %s", sim.config()).isTrue();
        Simulation.Outcome small = explorer.shrink(r.failure(), 300);
        assertThat(Explorer.kind(small)).isEqualTo("G1");
        assertThat(small.trace()).anyMatch(line -> line.contains("leader revoked"));
        System.out.printf("planted: the stream confirmed on read, found by the exhaustive mode after %d schedules"
                + " (%s); minimal counterexample:%n%s%n%n", r.schedules(), sim.config(), small.report());
    }

    /**
     * What was a gap of the stream harvest: the server knows only the confirmed position, and a leader confirms a
     * finished record only once every earlier one in commit order is finished too, whatever its key (and the server
     * learns it with the stream's next status update, lost if the stream is lost first). Without the ledger, the
     * next leader started from that position and delivered again records the old leader had finished after an
     * unfinished earlier one of another key — and had followed with later records of their own key: a re-run, which
     * broke G2 with no fault but the change of leader (found at random seed 12 of this configuration). The ledger
     * keeps the finished positions above the confirmed one across leaders; these seeds now keep every guarantee.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aLeaderChangeNoLongerRerunsRecordsFinishedAboveTheConfirmedPosition() {
        Simulation sim = new Simulation(Simulation.builder().streamHarvest().keys(2, 2).dispatchers(2)
                .storeErrors(1, StoreFaults.Operation.READ).lostConfirmations(true).leaderChanges(1).build());
        SimRuns.randomRuns(sim, 0, SEEDS);
    }

    /** The default harvest in every build; the mark harvest too in the long exploration. */
    static List<DispatcherConfig.Harvest> exhaustiveHarvests() {
        return DEVIATIONS > 1 ? List.of(DispatcherConfig.Harvest.values()) : List.of(DispatcherConfig.Harvest.CURSOR);
    }

    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest
    @MethodSource("exhaustiveHarvests")
    void exhaustiveSmallConfiguration(DispatcherConfig.Harvest harvest) {
        // 2 keys x 3 records, one late commit (and others wherever a schedule puts them), one send failure, one
        // leader change.
        Simulation sim = new Simulation(Simulation.builder().harvest(harvest).keys(2, 3).dispatchers(2)
                .lateCommits(1).sendFailures(1).leaderChanges(1).build());
        SimRuns.exhaustive(sim, DEVIATIONS);
    }

    /** A named configuration for each planted bug, and how it is found. */
    static SimulationBuilder configurationFor(PlantedBug bug) {
        SimulationBuilder b = switch (bug) {
            case PURGE_BEFORE_ACK, RETRY_OVERTAKES_HEAD -> Simulation.builder().keys(1, 2).dispatchers(1)
                    .sendFailures(1);
            case NO_FLUSH_ON_HANDOVER -> Simulation.builder().keys(1, 2).dispatchers(2).leaderChanges(1);
            case BARRIER_BEFORE_PURGE -> Simulation.builder().keys(1, 2).dispatchers(2)
                    .storeErrors(1, StoreFaults.Operation.PURGE).leaderChanges(1);
            case CURSOR_SKIPS_OPEN -> Simulation.builder().keys(2, 1).dispatchers(1).lateCommits(1);
        };
        return b.plant(bug);
    }

    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest
    @EnumSource(PlantedBug.class)
    void plantedBugIsFoundByTheExhaustiveMode(PlantedBug bug) {
        Simulation sim = new Simulation(configurationFor(bug).build());
        Explorer explorer = new Explorer(sim);
        Explorer.ExhaustiveResult r = explorer.exhaustive(2, 5_000);
        assertThat(r.failed()).as("%s found in %s", bug, sim.config()).isTrue();
        Simulation.Outcome small = explorer.shrink(r.failure(), 300);
        System.out.printf("planted %s, found by the exhaustive mode after %d schedules (%s); minimal"
                + " counterexample:%n%s%n%n", bug, r.schedules(), sim.config(), small.report());
        assertThat(small.trace().size()).isLessThanOrEqualTo(r.failure().trace().size());
    }

    /**
     * A known gap, kept visible: a leader checks its lease before each send, but a process paused between the
     * check and the send (as a JVM can be, anywhere) sends once it resumes, after another dispatcher acquired
     * leadership. Only fencing by the broker closes this window (issue #20); when it lands, this test flips.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aPauseBetweenTheLeaseCheckAndTheSendBreaksExclusivity() {
        Simulation sim = new Simulation(Simulation.builder().keys(1, 2).dispatchers(2).leaderChanges(1)
                .pauseInsideSend(true).build());
        Explorer explorer = new Explorer(sim);
        Explorer.RandomResult r = explorer.random(0, 3_000);
        assertThat(r.failed()).as("the zombie window is found").isTrue();
        Simulation.Outcome small = explorer.shrink(r.failure(), 300);
        assertThat(Explorer.kind(small)).isEqualTo("G3");
        System.out.printf("known gap (G3 without broker fencing), found by random seed %d:%n%s%n%n",
                r.failingSeed(), small.report());
    }

    /**
     * Storage fencing on, every fault once: a paused or cut-off leader's purges, failure records, parks and marks
     * after its successor took the epoch are refused, the engine stands down and forgets those records, and every
     * guarantee still holds (the successor delivers their rows again: G4 duplicates of a change of leader).
     */
    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest
    @EnumSource(DispatcherConfig.Harvest.class)
    void randomSeedsKeepEveryGuaranteeWithStorageFencing(DispatcherConfig.Harvest harvest) {
        Simulation sim = new Simulation(everyFault(harvest).storageFencing(true).build());
        SimRuns.randomRuns(sim, 0, SEEDS / 2);
    }

    /**
     * What storage fencing closes, and what it does not. With it on, a leader paused past its lease whose successor
     * took the epoch has its store writes refused by the store when it resumes (found in these seeds, and every
     * guarantee but G3 holds for every seed); but the one send that was between its lease check and the broker
     * when it paused still leaves when it resumes: the database cannot refuse a send. That window stays open until
     * the broker fences too (a transactional producer, issue #20).
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void storageFencingRefusesAPausedLeadersWritesButNotTheSendItWasMaking() {
        Simulation sim = new Simulation(Simulation.builder().keys(1, 2).dispatchers(2).leaderChanges(1)
                .pauseInsideSend(true).storageFencing(true).build());
        int refusedRuns = 0;
        int zombieSends = 0;
        for (long seed = 0; seed < 3_000; seed++) {
            Simulation.Outcome o = sim.run(Chooser.random(seed));
            if (o.trace().stream().anyMatch(line -> line.contains("refused: fenced by leader epoch"))) {
                refusedRuns++;
            }
            for (String v : o.violations()) {
                assertThat(v).as("seed %d: only the send window may break a guarantee:%n%s", seed, o.report())
                        .contains("G3:");
                zombieSends++;
            }
        }
        System.out.printf("storage fencing, a pause inside a send (%s): 3000 seeds, %d with a deposed leader's write"
                + " refused, %d sends by a deposed leader%n", sim.config(), refusedRuns, zombieSends);
        assertThat(refusedRuns).as("runs in which the store refused a deposed leader's write").isPositive();
        assertThat(zombieSends).as("the send window is still found: only the broker can close it").isPositive();
    }

    /**
     * Seeds per sharded configuration: 40 in every build (160 over the four), more with the long exploration's
     * {@code -Doutbox.sim.seeds} (a fiftieth of it), or exactly {@code -Doutbox.sim.shardedSeeds}.
     */
    private static final int SHARDED_SEEDS = Integer.getInteger("outbox.sim.shardedSeeds", Math.max(40, SEEDS / 50));

    /**
     * A sharded outbox: 4 shards over 2 dispatchers ({@code ShardedDispatcher}s, each an engine per shard and the
     * shard poller, all on the simulation's runtime) and a third that may join, 6 keys x 2 records (the keys fall in
     * all four shards), with shard leadership moving at 3 points the run chooses (each one of: an orderly move of a
     * shard, a join, a leave, a dispatcher cut off from the group or paused past its session, a shard's heartbeats
     * stalling), on top of the moves that spread the shards when the dispatchers join, and every other fault once.
     * A run costs mostly the hand-overs between the 8 to 12 engines' threads (about 1,500 choices a run: 50 to 150 ms
     * on the loaded 2-core machine); a poll interval of 200 ms (5 heartbeats per lease) cut the choices by about a
     * quarter.
     */
    static SimulationBuilder sharded(DispatcherConfig.Harvest harvest, boolean fencing) {
        return Simulation.builder().harvest(harvest).shards(4).keys(6, 2).dispatchers(2).joins(1).rebalances(3)
                .sendFailures(1).lostAcks(1).storeErrors(1).rollbacks(1).poison(true).storageFencing(fencing)
                .engine(e -> e.pollInterval(Duration.ofMillis(200)));
    }

    /**
     * The long exploration's wider sharded outbox: 6 shards over 3 dispatchers and a fourth that may join, 8 keys x 2
     * records, 5 leadership faults.
     */
    static SimulationBuilder shardedWide(DispatcherConfig.Harvest harvest, boolean fencing) {
        return sharded(harvest, fencing).shards(6).dispatchers(3).keys(8, 2).rebalances(5);
    }

    /** Each harvest with and without storage fencing; in the long exploration, the wider outbox's too. */
    static List<Arguments> shardedRuns() {
        List<Arguments> runs = new java.util.ArrayList<>();
        long first = 0;
        for (boolean wide : SEEDS > 1000 ? new boolean[] {false, true} : new boolean[] {false}) {
            for (DispatcherConfig.Harvest harvest : DispatcherConfig.Harvest.values()) {
                for (boolean fencing : new boolean[] {false, true}) {
                    runs.add(Arguments.of(harvest, fencing, wide, first));
                    first += SHARDED_SEEDS; // different seeds for each configuration
                }
            }
        }
        return runs;
    }

    /**
     * The engine sharded: G1, G2 and G6 per key across every shard, G3 per shard (a dispatcher sends a shard's
     * record only while it is the last to have acquired that shard), G4 against the faults of the record's own shard.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest(name = "{0}, storage fencing {1}, wide {2}, seeds from {3}")
    @MethodSource("shardedRuns")
    void randomSeedsKeepEveryGuaranteePerKeyWithShardLeadershipMoving(DispatcherConfig.Harvest harvest,
                                                                     boolean fencing, boolean wide, long firstSeed) {
        Simulation sim = new Simulation((wide ? shardedWide(harvest, fencing) : sharded(harvest, fencing)).build());
        SimRuns.randomRuns("random, sharded", sim, firstSeed, SHARDED_SEEDS, 100);
    }

    /**
     * A planted sharding bug in the store: each shard view forgets its shard and harvests the whole outbox, so that
     * every shard's leader sends every shard's records. The sharded seeds find it (G3 per shard, and usually G2 and
     * G4 with it).
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aShardViewThatForgetsItsShardIsFoundByTheShardedSeeds() {
        Simulation sim = new Simulation(sharded(DispatcherConfig.Harvest.CURSOR, false).plantForgottenShardFilter()
                .build());
        Explorer.RandomResult r = new Explorer(sim).random(0, SHARDED_SEEDS);
        assertThat(r.failed()).as("found in %s", sim.config()).isTrue();
        assertThat(Explorer.kind(r.failure())).isEqualTo("G3");
        System.out.printf("planted: shard views forget their shard, found by sharded seed %d: %s%n", r.failingSeed(),
                r.failure().violations().get(0));
    }

    /**
     * A planted sharding bug in the group (the transport's side of the hand-over): an orderly revocation grants the
     * shard to its next owner at once instead of once the old owner drained, so that the old owner still sends the
     * shard's records in flight after the new one took over. Found by the sharded seeds of the main configuration
     * (at the first seed when this was written; the test allows twice the build's seeds).
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aRevokedShardGrantedBeforeItsDrainIsFoundByTheShardedSeeds() {
        Simulation sim = new Simulation(sharded(DispatcherConfig.Harvest.CURSOR, false).plantGrantBeforeDrain()
                .build());
        Explorer.RandomResult r = new Explorer(sim).random(0, 2 * SHARDED_SEEDS);
        assertThat(r.failed()).as("found in %s", sim.config()).isTrue();
        assertThat(r.failure().violations()).anyMatch(v -> v.contains("G3:") && v.contains("after"));
        assertThat(r.failure().trace()).anyMatch(line -> line.contains("group: revokes shard"));
        System.out.printf("planted: a revoked shard granted before its drain, found by sharded seed %d: %s%n",
                r.failingSeed(), r.failure().violations().get(0));
    }

    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aFailingSeedReplaysExactly() {
        Simulation sim = new Simulation(configurationFor(PlantedBug.RETRY_OVERTAKES_HEAD).build());
        Explorer.RandomResult r = new Explorer(sim).random(0, 100);
        assertThat(r.failed()).isTrue();
        Simulation.Outcome again = sim.run(Chooser.random(r.failingSeed()));
        assertThat(again.trace()).isEqualTo(r.failure().trace());
        assertThat(again.choices()).isEqualTo(r.failure().choices());
        Simulation.Outcome replayed = sim.run(Chooser.script(r.failure().choices()));
        assertThat(replayed.trace()).isEqualTo(r.failure().trace());
        assertThat(replayed.violations()).isEqualTo(r.failure().violations());
    }

    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aPassingRunReplaysExactlyToo() {
        Simulation sim = new Simulation(everyFault(DispatcherConfig.Harvest.CURSOR).build());
        Simulation.Outcome first = sim.run(Chooser.random(42));
        Simulation.Outcome second = sim.run(Chooser.script(first.choices()));
        assertThat(first.failed()).isFalse();
        assertThat(second.trace()).isEqualTo(first.trace());
        assertThat(second.choices()).isEqualTo(first.choices());
    }
}
