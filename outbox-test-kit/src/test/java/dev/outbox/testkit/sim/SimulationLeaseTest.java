package dev.outbox.testkit.sim;

import dev.outbox.DispatcherConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine under the deterministic simulation with leader election in the database
 * ({@link SimulationBuilder#databaseElection()}): a lease table under the simulated clock in place of the Kafka-like
 * group, its holder closed (a clean hand-over), cut off from the database or paused past its lease (a take-over once
 * the lease lapsed), and the planted bug of a lease renewed after it lapsed, which the simulation must find. Longer
 * explorations: {@code -Doutbox.sim.seeds=10000 -Doutbox.sim.deviations=2}.
 */
class SimulationLeaseTest {
    private static final int SEEDS = Integer.getInteger("outbox.sim.seeds", 1000);
    private static final int DEVIATIONS = Integer.getInteger("outbox.sim.deviations", 1);

    /** 2 keys x 3 records, two dispatchers electing their leader in the database, every kind of fault once. */
    static SimulationBuilder everyFault(DispatcherConfig.Harvest harvest) {
        return SimulationTest.everyFault(harvest).databaseElection();
    }

    /**
     * Every guarantee with every fault once, storage fencing on (taking the lease increments the epoch the store
     * checks), and each of the lease holder's three faults followed, in some seeds, by another dispatcher taking the
     * lease: the random seeds do reach the take-overs they are meant to test.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest
    @EnumSource(DispatcherConfig.Harvest.class)
    void randomSeedsKeepEveryGuaranteeWithTheDatabaseLease(DispatcherConfig.Harvest harvest) {
        Simulation sim = new Simulation(everyFault(harvest).storageFencing(true).build());
        long start = System.nanoTime();
        Map<String, Integer> takeOvers = new LinkedHashMap<>();
        for (String fault : new String[] {"closes (a clean hand-over", "is cut off from the lease table",
                "is paused until"}) {
            takeOvers.put(fault, 0);
        }
        long choices = 0;
        int seeds = SEEDS / 4;
        for (long seed = 0; seed < seeds; seed++) {
            Simulation.Outcome o = sim.run(Chooser.random(seed));
            choices += o.choiceCount();
            SimRuns.assertPassed(sim, seed, o, 500);
            countTakeOvers(o, takeOvers);
        }
        System.out.printf("simulation, random: %s: %d seeds, %d choices, take-overs after %s, %d ms%n",
                sim.config(), seeds, choices, takeOvers, (System.nanoTime() - start) / 1_000_000);
        assertThat(takeOvers).as("seeds in which d1 took the lease after d0's fault").allSatisfy((fault, n) ->
                assertThat(n).as(fault).isPositive());
    }

    /** Adds one to each fault of d0 after which d1 took the lease in {@code o}. */
    private static void countTakeOvers(Simulation.Outcome o, Map<String, Integer> takeOvers) {
        String fault = null;
        for (String line : o.trace()) {
            for (String f : takeOvers.keySet()) {
                if (line.contains("d0: its dispatcher " + f) || line.contains("d0 " + f) || line.contains("d0: the"
                        + " whole process " + f)) {
                    fault = f;
                }
            }
            if (fault != null && line.contains("lease table: d1 takes the lease")) {
                takeOvers.merge(fault, 1, Integer::sum);
                return;
            }
        }
    }

    /**
     * 2 keys x 1 record, two dispatchers, k0's transaction committing 4 s after it began (after a leader
     * paused past its lease woke up), one fault of the lease holder: the configuration that finds the planted bug
     * below.
     */
    static SimulationBuilder lateCommitAfterALapse() {
        return Simulation.builder().keys(2, 1).dispatchers(2).leaderChanges(1)
                .lateCommits(1, Duration.ofSeconds(4)).databaseElection();
    }

    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void exhaustiveSmallConfigurationWithTheDatabaseLease() {
        Simulation sim = new Simulation(lateCommitAfterALapse().build());
        SimRuns.exhaustive(sim, DEVIATIONS);
    }

    /** The choices that replay a run with {@link Chooser#script}, less the first options it takes anyway. */
    private static java.util.List<Integer> withoutTrailingZeros(java.util.List<Integer> choices) {
        int end = choices.size();
        while (end > 0 && choices.get(end - 1) == 0) {
            end--;
        }
        return choices.subList(0, end);
    }

    /**
     * The planted bug, found within the one deviation that the exhaustive run above explores completely without it: a
     * renewal that takes no notice of the lease having lapsed. The leader paused past its lease
     * renews it when it wakes, although the standby took it meanwhile, and both lead: each renews the other's lease
     * as its own, and both send the late record (G3, and a duplicate without a fault, G4). The correct lease finds
     * its renewal refused, and the woken leader steps down.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aLeaseRenewedAfterItLapsedIsFoundByTheExhaustiveMode() {
        Simulation sim = new Simulation(lateCommitAfterALapse().plantRenewalAfterLapse().build());
        Explorer explorer = new Explorer(sim);
        Explorer.ExhaustiveResult r = explorer.exhaustive(1, 5_000);
        assertThat(r.failed()).as("found in %s", sim.config()).isTrue();
        Simulation.Outcome small = explorer.shrink(r.failure(), 300);
        assertThat(Explorer.kind(small)).isEqualTo("G3");
        assertThat(small.trace()).anyMatch(line -> line.contains("renews the lease 1 after it lapsed"));
        System.out.printf("planted: a lease renewed after it lapsed, found by the exhaustive mode after %d schedules"
                + " (%s); minimal counterexample (replay with Chooser.script(%s)):%n%s%n%n", r.schedules(),
                sim.config(), withoutTrailingZeros(small.choices()), small.report());
    }

    /** Seeds per sharded configuration: as {@code SimulationTest}'s. */
    private static final int SHARDED_SEEDS = Integer.getInteger("outbox.sim.shardedSeeds", Math.max(40, SEEDS / 50));

    /** Each harvest with and without storage fencing, different seeds for each. */
    static List<Arguments> shardedRuns() {
        List<Arguments> runs = new ArrayList<>();
        long first = 0;
        for (DispatcherConfig.Harvest harvest : DispatcherConfig.Harvest.values()) {
            for (boolean fencing : new boolean[] {false, true}) {
                runs.add(Arguments.of(harvest, fencing, first));
                first += SHARDED_SEEDS;
            }
        }
        return runs;
    }

    /**
     * A sharded outbox whose dispatchers balance shard leases in the database among themselves
     * ({@code SqlShardedLeaderTransport}'s scheme): {@code SimulationTest}'s sharded configuration (4 shards, 2
     * dispatchers and a third that may join, 6 keys x 2 records, 3 leadership faults, every other fault once) with
     * the database election. G3 per shard, G4 against the faults and lease changes of the record's own shard. Some
     * seeds must see a newcomer ask for a lease and a member find one of its leases gone.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @ParameterizedTest(name = "{0}, storage fencing {1}, seeds from {2}")
    @MethodSource("shardedRuns")
    void randomSeedsKeepEveryGuaranteePerKeyWithShardLeasesMoving(DispatcherConfig.Harvest harvest, boolean fencing,
                                                                  long firstSeed) {
        Simulation sim = new Simulation(SimulationTest.sharded(harvest, fencing).databaseElection().build());
        long start = System.nanoTime();
        long choices = 0;
        int asked = 0;
        int lost = 0;
        for (long seed = firstSeed; seed < firstSeed + SHARDED_SEEDS; seed++) {
            Simulation.Outcome o = sim.run(Chooser.random(seed));
            choices += o.choiceCount();
            SimRuns.assertPassed(sim, seed, o, 100);
            asked += o.trace().stream().anyMatch(l -> l.contains("asks for the lease")) ? 1 : 0;
            lost += o.trace().stream().anyMatch(l -> l.contains("were taken or expired")) ? 1 : 0;
        }
        System.out.printf("simulation, random, sharded leases: %s: seeds %d to %d, %d choices, %d with a lease asked"
                + " for, %d with a lease lost, %d ms%n", sim.config(), firstSeed, firstSeed + SHARDED_SEEDS - 1,
                choices, asked, lost, (System.nanoTime() - start) / 1_000_000);
        assertThat(asked).as("seeds in which a member asked for a busier member's lease").isPositive();
        assertThat(lost).as("seeds in which a member found one of its leases gone").isPositive();
    }

    /**
     * A gap this simulation found in the shard leases' balancing, now closed (sharded seed 131 of the cursor
     * configuration): d2 joins and asks d0 for shard 2 ({@code want}), then d1 and d2 leave, d1 releasing its leases.
     * A request used to stay on the live row it asked for for as long as that row's holder renewed it, and every
     * member counted the requester among the live members — also after it left — so d0 kept its ⌈N/2⌉ and took none
     * of the released leases: shards 0 and 3 were never led again and their records never delivered (G1). A request
     * now lapses a lease after its requester last made it (the requester renews it every acquire interval while it is
     * still short), for a member that cannot withdraw it; and a member that closes withdraws its request (d2 here), so
     * d0 counts itself alone at its next try and takes the released leases: every committed record reaches the broker.
     */
    @Execution(ExecutionMode.CONCURRENT)
    @Test
    void aMemberThatAskedAndLeftStopsCountingAndTheShardsAnotherMemberReleasedAreLedAgain() {
        Simulation sim = new Simulation(SimulationTest.sharded(DispatcherConfig.Harvest.CURSOR, false)
                .databaseElection().build());
        long seed = 131;
        Simulation.Outcome o = sim.run(Chooser.random(seed));
        assertThat(o.trace()).as("seed %d reaches the stall's set-up (%s)", seed, sim.config())
                .anyMatch(line -> line.contains("d2") && line.contains("asks for the lease"))
                .anyMatch(line -> line.contains("d2 leaves: its dispatcher closes"))
                .anyMatch(line -> line.contains("d1 leaves: its dispatcher closes"))
                .anyMatch(line -> line.contains("lease table: d2 withdraws its request for the lease"));
        assertThat(o.violations()).as("seed %d (%s):%n%s", seed, sim.config(), o.report()).isEmpty();
        java.util.Set<Long> committed = new java.util.TreeSet<>();
        java.util.Set<Long> reached = new java.util.TreeSet<>();
        java.util.Set<Long> poison = new java.util.TreeSet<>();
        java.util.regex.Pattern id = java.util.regex.Pattern.compile("\\d+");
        for (String line : o.trace()) {
            String text = line.substring(line.indexOf(']') + 1);
            java.util.Set<Long> into = text.contains("writer: commits #") ? committed
                    : text.contains("broker: acknowledges #") || text.contains("broker: appends #") ? reached
                    : text.contains("broker: rejects #") && text.contains("(poison)") ? poison : null;
            if (into != null) {
                String ids = text.substring(text.indexOf('#'));
                java.util.regex.Matcher m = id.matcher(into == committed ? ids : ids.split(" ")[0]);
                while (m.find()) {
                    into.add(Long.parseLong(m.group()));
                }
            }
        }
        java.util.Set<Long> undelivered = new java.util.TreeSet<>(committed);
        undelivered.removeAll(reached);
        undelivered.removeAll(poison);
        assertThat(committed).as("seed %d commits records", seed).hasSizeGreaterThan(poison.size());
        assertThat(undelivered).as("seed %d: committed records that never reached the broker (G1)%n%s", seed,
                o.report()).isEmpty();
        assertThat(o.trace()).as("d0 took the leases d1 released once d2 withdrew its request")
                .anyMatch(line -> line.contains("lease table: d0 takes the lease 1 (d0)"))
                .anyMatch(line -> line.contains("lease table: d0 takes the lease 4 (d0)"));
        System.out.printf("closed gap (shard leases: a departed member's request is withdrawn or lapses), sharded"
                + " seed %d (%s):"
                + " committed %s, reached the broker %s, poison %s, no violation%n", seed, sim.config(), committed,
                reached, poison);
    }
}
