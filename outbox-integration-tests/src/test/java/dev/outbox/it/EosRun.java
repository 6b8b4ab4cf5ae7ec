package dev.outbox.it;

import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * One seeded run of {@link ExactlyOnceEndToEndTest}: three dispatcher processes ({@link ExactlyOnceDispatcherChild})
 * harvest one Postgres outbox into Kafka with the transactional producer (exactly-once on or off) while its writer
 * commits and a {@code read_committed} consumer checks every record; the faults, each at a moment the seed chooses:
 * <ol>
 *   <li>a leader SIGKILLed (a real process kill: whatever its transaction was doing — open, committing, committed
 *       and not yet purged — is cut there); the next leader must take over;</li>
 *   <li>Kafka stopped and restarted (the leaders fence themselves; transactions in flight abort or time out);</li>
 *   <li>the dispatchers' database connections killed, twice;</li>
 *   <li>sharded only: a held fourth process joins, and shards move to it mid-run.</li>
 * </ol>
 * Then the writer stops, everything drains, the processes close, and the run counts: records written, consumed,
 * duplicates, lost, per-key order violations, and the records the brokers acknowledged without a send (found on the
 * progress record: what exactly-once saved). A run does not assert: {@link ExactlyOnceEndToEndTest} does, over all
 * runs, so that a loop of runs reports every run's counts.
 */
final class EosRun {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final int TRAFFIC = 200;

    /** What one run counted; {@code error} is the run's failure (a time-out, say), or null. */
    record Counts(int run, long seed, boolean exactlyOnce, int shards, long written, long consumed, long copies,
                  long duplicates, long lost, int orderViolations, long foreign, long parked, long skipped,
                  String story, long millis, String error) {
        boolean clean() {
            return error == null && duplicates == 0 && lost == 0 && orderViolations == 0 && foreign == 0
                    && parked == 0;
        }

        @Override
        public String toString() {
            return String.format("run %d (seed %d, %s, %s): %d records written, %d consumed (%d copies), "
                            + "%d duplicates, %d lost, %d per-key order violations, %d acknowledged without a send; "
                            + "%d s; faults: %s%s", run, seed, exactlyOnce ? "exactly-once on" : "exactly-once OFF",
                    shards == 0 ? "one leader" : shards + " shards", written, consumed, copies, duplicates, lost,
                    orderViolations, skipped, millis / 1000, story, error == null ? "" : "; FAILED: " + error);
        }
    }

    private final int run;
    private final long seed;
    private final int shards;
    private final boolean exactlyOnce;
    private final Random random;
    private final StringBuilder story = new StringBuilder();
    private final List<EosProcess> processes = new ArrayList<>();
    private final List<EosProcess> live = new ArrayList<>();
    private EosOutbox outbox;
    private long talliedDuplicates;
    private long talliedSkipped;

    EosRun(int run, long seed, int shards, boolean exactlyOnce) {
        this.run = run;
        this.seed = seed;
        this.shards = shards;
        this.exactlyOnce = exactlyOnce;
        this.random = new Random(seed);
    }

    /** Runs on {@code pg} and {@code kafka}; never throws for the scenario's own failures (see {@link Counts}). */
    Counts execute(JdbcServer pg, KafkaServer kafka) throws InterruptedException {
        long began = System.nanoTime();
        String name = (shards == 0 ? "one" : "sharded") + "-" + run + "-" + Long.toHexString(seed & 0xffffffL);
        String error = null;
        try {
            outbox = new EosOutbox(pg, kafka, shards == 0 ? "e2e_eos_one" : "e2e_eos_sharded", name, shards,
                    exactlyOnce, seed);
            outbox.start();
            drive(kafka, name);
        } catch (Exception | AssertionError e) {
            error = e.toString();
            e.printStackTrace(System.out);
        } finally {
            for (EosProcess p : processes) {
                p.stop();
            }
        }
        long skipped = processes.stream().mapToLong(EosProcess::skipped).sum();
        Counts c;
        if (outbox == null) {
            c = new Counts(run, seed, exactlyOnce, shards, 0, 0, 0, 0, 0, 0, 0, 0, skipped, story.toString(),
                    millisSince(began), error);
        } else {
            TopicWatcher w = outbox.watcher();
            if (outbox.writerFailure() != null && error == null) {
                error = "the writer failed: " + outbox.writerFailure();
            }
            if (w.failure() != null && error == null) {
                error = "the consumer failed: " + w.failure();
            }
            c = new Counts(run, seed, exactlyOnce, shards, outbox.written(), w.distinct(), w.records(),
                    w.duplicates(), outbox.written() - w.distinct(), w.violations().size(), w.foreign().size(),
                    outbox.parked(), skipped, story.toString(), millisSince(began), error);
            if (!w.violations().isEmpty()) {
                System.out.println("per-key order violations of run " + run + " (seed " + seed + "): "
                        + w.violations());
            }
            if (w.duplicates() > 0) {
                System.out.println("duplicates of run " + run + " (seed " + seed + "), key#seq (token): "
                        + duplicated(w));
            }
            outbox.close(c.clean()); // a run that went wrong keeps its topics (the data topic, its progress)
        }
        System.out.println("EOS E2E " + c);
        return c;
    }

    /** The records consumed more than once: key#seq (token) ×copies. */
    private static List<String> duplicated(DataWatcher w) {
        List<String> out = new ArrayList<>();
        w.copies().forEach((key, copies) -> copies.stream()
                .collect(java.util.stream.Collectors.groupingBy(x -> x.seq() + " (" + x.token() + ")",
                        java.util.stream.Collectors.counting()))
                .forEach((what, n) -> {
                    if (n > 1) {
                        out.add(key + "#" + what + " x" + n);
                    }
                }));
        return out;
    }

    private void drive(KafkaServer kafka, String name) throws Exception {
        for (int i = 0; i < 3; i++) {
            EosProcess p = new EosProcess(name, "c" + i, false, outbox);
            processes.add(p);
            live.add(p);
        }
        EosProcess joiner = null;
        if (shards > 0) {
            // The fourth process boots now and joins later on a word: a JVM's start is no part of the scenario.
            joiner = new EosProcess(name, "c3", true, outbox);
            processes.add(joiner);
        }
        await(this::spread, () -> "every shard led once over " + live);
        story.append("led by ").append(live);
        awaitTraffic();

        // 1. SIGKILL a leader at a random moment.
        pause(random.nextInt(2_000));
        List<EosProcess> leaders = live.stream().filter(p -> !p.leads().isEmpty()).toList();
        EosProcess victim = leaders.get(random.nextInt(leaders.size()));
        Set<Integer> itsShards = victim.leads();
        long unconsumed = outbox.written() - outbox.watcher().distinct();
        long killing = System.nanoTime();
        victim.kill();
        live.remove(victim);
        await(this::spread, () -> "the shards of the killed " + victim.name + " led by another: " + live);
        story.append(String.format("; SIGKILL %s leading %s (%d records committed and not yet consumed), led again"
                + " after %d ms: %s", victim.name, itsShards, unconsumed, millisSince(killing), live));
        awaitTraffic();
        tally();

        // 2. Kafka stopped and restarted at a random moment.
        pause(random.nextInt(1_000));
        long stopping = System.nanoTime();
        kafka.stop();
        long stopped = millisSince(stopping);
        kafka.restart();
        long restarted = System.nanoTime();
        awaitTraffic();
        story.append(String.format("; Kafka stopped in %d ms, restarted, %d records consumed %d ms after", stopped,
                TRAFFIC, millisSince(restarted)));
        tally();

        // 3. The dispatchers' database connections killed, twice, at random moments.
        for (int i = 1; i <= 2; i++) {
            pause(random.nextInt(1_000));
            int killed = outbox.killDispatcherConnections();
            story.append("; ").append(killed).append(" database sessions killed");
            awaitTraffic();
            tally();
        }

        // 4. Sharded: a fourth process joins and shards move to it.
        if (joiner != null) {
            EosProcess j = joiner;
            await(j::ready, () -> j.name + " ready");
            long joining = System.nanoTime();
            j.start();
            live.add(j);
            await(() -> spread() && !j.leads().isEmpty(), () -> "shards moved to " + j.name + ": " + live);
            story.append(String.format("; %s joined, given %s in %d ms: %s", j.name, j.leads(),
                    millisSince(joining), live));
            awaitTraffic();
            tally();
        }

        outbox.stopWriting();
        await(outbox::drained, () -> "drained: " + outbox.watcher().distinct() + " of " + outbox.written()
                + " consumed, " + outbox.backlog() + " rows left; leaders " + live);
    }

    /**
     * Adds to the story the duplicates consumed and the records acknowledged without a send since the last tally: what
     * the fault just struck (and the traffic after it) made.
     */
    private void tally() {
        long duplicates = outbox.watcher().duplicates();
        long skipped = processes.stream().mapToLong(EosProcess::skipped).sum();
        story.append(String.format(" {+%d duplicates, +%d acknowledged without a send}", duplicates - talliedDuplicates,
                skipped - talliedSkipped));
        talliedDuplicates = duplicates;
        talliedSkipped = skipped;
    }

    /**
     * Whether the live processes lead every shard, each shard once, and (sharded) each process at least one (the one
     * leader: exactly one process leads).
     */
    private boolean spread() {
        int wanted = shards == 0 ? 1 : shards;
        Set<Integer> all = new TreeSet<>();
        int total = 0;
        for (EosProcess p : live) {
            if (shards > 0 && p.leads().isEmpty()) {
                return false;
            }
            all.addAll(p.leads());
            total += p.leads().size();
        }
        return total == wanted && all.size() == wanted;
    }

    /** Waits until the consumer has seen {@value #TRAFFIC} more records. */
    private void awaitTraffic() {
        long target = outbox.watcher().distinct() + TRAFFIC;
        await(() -> outbox.watcher().distinct() >= target, () -> "traffic: " + outbox.watcher().distinct() + " of "
                + target + " consumed, " + outbox.written() + " written; leaders " + live);
    }

    /**
     * Lets the run go on for {@code millis} before the next fault: not a wait for a condition, but the seed's choice
     * of the moment the fault strikes (mid-transaction, mid-commit, between a commit and its purge).
     */
    private static void pause(long millis) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    private static void await(BooleanSupplier condition, Supplier<String> what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + WAIT + " waiting for " + what.get());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }

    private static long millisSince(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
    }
}
