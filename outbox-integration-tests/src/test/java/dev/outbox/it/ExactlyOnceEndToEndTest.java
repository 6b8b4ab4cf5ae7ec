package dev.outbox.it;

import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Exactly-once into Kafka end to end (issue #40): dispatcher processes publish with the transactional producer and
 * {@code exactlyOnce()}, a consumer reads {@code read_committed}, and each seeded run ({@link EosRun}) SIGKILLs a
 * leader process at a random moment, restarts Kafka and kills the dispatchers' database connections; the sharded runs
 * also have a fourth process join so that shards move mid-run. Every run must end with 0 duplicates, 0 records lost
 * and 0 per-key order violations.
 *
 * <p>The build runs one short run of one leader (the sharded test is tagged slow); more are run by hand (the whole reactor must stay within its time budget):
 * <ul>
 *   <li>{@code -Doutbox.e2e.eosRuns=40}: runs of one leader ({@code KafkaLeaderTransport});</li>
 *   <li>{@code -Doutbox.e2e.eosShardedRuns=N}: runs of six shards ({@code KafkaShardedLeaderTransport});</li>
 *   <li>{@code -Doutbox.e2e.seed=S}: run {@code i} takes the seed {@code S + i} (every run prints its seed, so
 *       {@code -Doutbox.e2e.seed=<a run's seed> -Doutbox.e2e.eosRuns=1} repeats that run);</li>
 *   <li>{@code -Doutbox.e2e.eos=false}: the same runs with exactly-once off (the transactional producer alone), to
 *       compare: their duplicates are counted and printed, not asserted.</li>
 * </ul>
 * Each run prints a line {@code EOS E2E run …} with its counts and faults; the test prints all of them again at the
 * end, with the totals, and only then asserts, so that a loop reports every run. The child processes' logs go to
 * {@code target/eos-e2e-<run>-<process>.log}.
 */
class ExactlyOnceEndToEndTest {
    private static final boolean EXACTLY_ONCE = !"false".equals(System.getProperty("outbox.e2e.eos"));

    @Test
    void oneLeaderSigkilledKafkaRestartedConnectionsKilled() throws Exception {
        runs(Integer.getInteger("outbox.e2e.eosRuns", 1), 0);
    }

    /**
     * Tagged slow, out of the build, for its time: one sharded run takes 40–140 s, which the build's 20 minutes
     * cannot spare (its duplicates, a progress read that stopped below another producer's open transaction, are
     * fixed: docs/how-we-test.md). Run it with {@code -DexcludedGroups= -Doutbox.e2e.eosShardedRuns=20}.
     */
    @Tag("slow")
    @Test
    void shardedLeadersOneSigkilledAndShardsMovedToAJoiner() throws Exception {
        runs(Integer.getInteger("outbox.e2e.eosShardedRuns", 1), ShardedKafkaEndToEndTest.SHARDS);
    }

    private static void runs(int count, int shards) throws Exception {
        long base = Long.getLong("outbox.e2e.seed", System.nanoTime());
        JdbcServer pg = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        List<EosRun.Counts> all = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            all.add(new EosRun(i, base + i, shards, EXACTLY_ONCE).execute(pg, kafka));
        }
        String what = (shards == 0 ? "one leader" : shards + " shards") + ", exactly-once "
                + (EXACTLY_ONCE ? "on" : "OFF");
        StringBuilder report = new StringBuilder("EOS E2E summary (" + what + ", " + count + " runs, seeds " + base
                + " to " + (base + count - 1) + "):\n");
        all.forEach(c -> report.append("  ").append(c).append('\n'));
        report.append(String.format("  total: %d records written, %d duplicates, %d lost, %d per-key order violations,"
                        + " %d acknowledged without a send, %d runs failed",
                all.stream().mapToLong(EosRun.Counts::written).sum(),
                all.stream().mapToLong(EosRun.Counts::duplicates).sum(),
                all.stream().mapToLong(EosRun.Counts::lost).sum(),
                all.stream().mapToLong(EosRun.Counts::orderViolations).sum(),
                all.stream().mapToLong(EosRun.Counts::skipped).sum(),
                all.stream().filter(c -> c.error() != null).count()));
        System.out.println(report);

        assertThat(all).as("runs that failed").allSatisfy(c -> assertThat(c.error()).as("%s", c).isNull());
        for (EosRun.Counts c : all) {
            assertThat(c.written()).as("records written, run %d (seed %d)", c.run(), c.seed()).isPositive();
            assertThat(c.lost()).as("records lost, run %d (seed %d)", c.run(), c.seed()).isZero();
            assertThat(c.orderViolations()).as("per-key order violations, run %d (seed %d)", c.run(), c.seed())
                    .isZero();
            assertThat(c.foreign()).as("records nobody wrote, run %d (seed %d)", c.run(), c.seed()).isZero();
            assertThat(c.parked()).as("records parked, run %d (seed %d)", c.run(), c.seed()).isZero();
            if (EXACTLY_ONCE) {
                assertThat(c.duplicates()).as("duplicates with exactly-once on, run %d (seed %d)", c.run(), c.seed())
                        .isZero();
            }
        }
    }
}
