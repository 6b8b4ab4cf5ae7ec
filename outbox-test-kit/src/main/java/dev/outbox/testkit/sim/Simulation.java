package dev.outbox.testkit.sim;

import dev.outbox.internal.DefaultDispatcher;
import dev.outbox.testkit.InMemoryCommitLog;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.InMemoryStreamStore;

import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * One configuration of the deterministic simulation: the real engine ({@link DefaultDispatcher}, one per
 * dispatcher) over an {@link InMemoryStore} (or, with {@link SimulationBuilder#streamHarvest()}, an
 * {@link InMemoryCommitLog} that each dispatcher streams through its own {@link InMemoryStreamStore}), a simulated
 * broker and leader group, all on one {@link SimScheduler} (or, with {@link SimulationBuilder#databaseElection()}, a
 * lease table in the database in place of the group), and an environment that writes records in transactions that
 * commit late or roll back, acknowledges or fails sends, and injects faults — every step of it a choice.
 * {@link #run(Chooser)} plays one run and checks the
 * guarantees after every step and at the end:
 * <ul>
 *   <li>G1: every committed record reaches the broker (or, if it is poison, is parked); no rolled-back one does;</li>
 *   <li>G2: per key, the broker's sequence never goes backwards (a repeat of the latest record is allowed);</li>
 *   <li>G3: no dispatcher sends after another acquired leadership later than it did;</li>
 *   <li>G4: a record reaches the broker twice only if a fault or a change of leader happened while it was in
 *       flight; with {@link SimulationBuilder#exactlyOnce()}, never;</li>
 *   <li>G6: a poison record is parked, and its key's later records and every other key are still delivered.</li>
 * </ul>
 * The environment's timing assumptions, as in production: the broker answers every send within
 * {@code deliveryTimeout}, which is shorter than a dispatcher's drain timeout and than the group's session
 * timeout, after which a paused or partitioned leader's partition goes to another member; the heartbeat timeout
 * (the lease) is shorter than the session timeout. Immutable; thread-safe.
 */
public final class Simulation {
    private static final long MS = 1_000_000L;
    static final String POISON_TOPIC = "poison";

    private final SimulationConfig config;

    /**
     * A simulation of {@code config}.
     *
     * @param config the configuration, from {@link #builder()}; not {@code null}
     * @throws NullPointerException if {@code config} is {@code null}
     */
    public Simulation(SimulationConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    /**
     * The configuration every run plays.
     *
     * @return the configuration given to the constructor
     */
    public SimulationConfig config() {
        return config;
    }

    /**
     * Plays one run with {@code chooser}'s choices.
     *
     * @param chooser makes every choice of the run; a fresh one per run (it records the choices made)
     * @return what the run did and the guarantees it broke
     */
    public Outcome run(Chooser chooser) {
        return run(chooser, null);
    }

    /**
     * Plays one run; {@code onChoice}, if given, sees a fingerprint of the state before every choice (the
     * exhaustive explorer's state hashing).
     *
     * @param chooser  makes every choice of the run; a fresh one per run (it records the choices made)
     * @param onChoice called on the run's worker thread before each choice with a text that is equal for equal
     *                 states (the choice's label included); {@code null} for none, which also runs faster (no
     *                 worker locations are tracked)
     * @return what the run did and the guarantees it broke
     */
    public Outcome run(Chooser chooser, Consumer<String> onChoice) {
        SimScheduler sched = new SimScheduler(chooser, config.seed, config.bugs, config.maxChoices,
                config.timeLimit.toNanos());
        SimRun run = new SimRun(config, sched);
        if (onChoice != null) {
            sched.trackLocations();
            // The choice's own subject is part of the state: two choices in a row (which worker runs, then whether
            // the store call it makes fails) must not pass for one state visited twice.
            sched.beforeEveryChoice(label -> onChoice.accept(label + "|" + run.fingerprint()));
        }
        String ended = sched.run(run::main);
        if (ended != null) {
            run.violation("the run did not finish: " + ended);
        }
        if (sched.uncaught() != null) {
            java.io.StringWriter w = new java.io.StringWriter();
            sched.uncaught().printStackTrace(new java.io.PrintWriter(w));
            run.violation("a worker threw " + w.toString().lines().limit(8)
                    .collect(java.util.stream.Collectors.joining("\n    ")));
        }
        if (run.violations.isEmpty()) {
            run.checks.checkEnd();
        }
        return new Outcome(chooser.made(), chooser.options(), List.copyOf(run.trace), List.copyOf(run.violations),
                sched.choices());
    }

    static String ms(long nanos) {
        return String.format("%8.3fs", nanos / 1e9);
    }

    // ------------------------------------------------------------------------------------------ results

    /**
     * What a run did: its choices (which replay it), its trace (what happened, step by step, in virtual time) and
     * the guarantees it broke.
     *
     * @param choices     the options taken, in order: {@link Chooser#script} of them replays the run
     * @param options     how many options each choice had
     * @param trace       what happened, one line per step, stamped with virtual time
     * @param violations  the guarantees broken ("G2: ..."), or why the run did not finish; empty for a run that
     *                    passed
     * @param choiceCount the choices the scheduler counted (those of two or more options)
     */
    public record Outcome(List<Integer> choices, List<Integer> options, List<String> trace, List<String> violations,
                          long choiceCount) {
        /**
         * Whether the run broke a guarantee (or did not finish).
         *
         * @return {@code true} if {@link #violations()} is not empty
         */
        public boolean failed() {
            return !violations.isEmpty();
        }

        /**
         * The trace and the violations, one per line.
         *
         * @return a text to print for a failing run: the trace, then the violations or "no violation"
         */
        public String report() {
            return String.join("\n", trace) + "\n" + (violations.isEmpty() ? "no violation"
                    : "violations:\n  " + String.join("\n  ", violations));
        }
    }

    // ------------------------------------------------------------------------------------------ configuration

    /**
     * Starts a configuration.
     *
     * @return a new builder with the defaults: 2 keys x 3 records, 2 dispatchers, the engine's mark harvest, no
     *         faults
     */
    public static SimulationBuilder builder() {
        return new SimulationBuilder();
    }
}
