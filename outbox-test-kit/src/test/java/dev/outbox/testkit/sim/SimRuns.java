package dev.outbox.testkit.sim;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The simulation tests' shared runs: seeds at random, or every schedule within a bound, each printed on one line, and
 * a failing run shrunk and reported with the seed and the choices that replay it.
 */
final class SimRuns {
    private SimRuns() {
    }

    /**
     * Runs seeds {@code firstSeed} to {@code firstSeed + seeds - 1} of {@code sim}, prints what ran, and fails on the
     * first seed that breaks a guarantee.
     *
     * @param what       the line's label ("random", "random, sharded", ...)
     * @param shrinkRuns the most runs to shrink a failure with
     * @return what ran (no failure)
     * @throws AssertionError with the failing seed, its shrunk run and the choices that replay it
     */
    static Explorer.RandomResult randomRuns(String what, Simulation sim, long firstSeed, int seeds, int shrinkRuns) {
        long start = System.nanoTime();
        Explorer.RandomResult r = new Explorer(sim).random(firstSeed, seeds);
        System.out.printf("simulation, %s: %s: seeds %d to %d, %d choices, %d ms%n", what, sim.config(), firstSeed,
                firstSeed + r.runs() - 1, r.choices(), (System.nanoTime() - start) / 1_000_000);
        if (r.failed()) {
            throw failure(sim, r.failingSeed(), r.failure(), shrinkRuns);
        }
        return r;
    }

    /**
     * Runs seeds {@code firstSeed} to {@code firstSeed + seeds - 1} of {@code sim} at random ({@code "random"}),
     * shrinking a failure within 500 runs.
     *
     * @return what ran (no failure)
     * @throws AssertionError with the failing seed, its shrunk run and the choices that replay it
     */
    static Explorer.RandomResult randomRuns(Simulation sim, long firstSeed, int seeds) {
        return randomRuns("random", sim, firstSeed, seeds, 500);
    }

    /**
     * Fails if {@code outcome}, the run of {@code seed} (for a test that runs its seeds itself), broke a guarantee.
     *
     * @param shrinkRuns the most runs to shrink a failure with
     * @throws AssertionError with the seed, its shrunk run and the choices that replay it
     */
    static void assertPassed(Simulation sim, long seed, Simulation.Outcome outcome, int shrinkRuns) {
        if (outcome.failed()) {
            throw failure(sim, seed, outcome, shrinkRuns);
        }
    }

    /**
     * Runs every schedule of {@code sim} within {@code deviations} of the happy path (at most 200,000), prints what
     * ran, and checks that none failed, that the bound was explored to its end, and that it held over 100 schedules.
     *
     * @return what ran
     * @throws AssertionError with the failing schedule, shrunk, or if the exploration was cut short or too small
     */
    static Explorer.ExhaustiveResult exhaustive(Simulation sim, int deviations) {
        long start = System.nanoTime();
        Explorer.ExhaustiveResult r = new Explorer(sim).exhaustive(deviations, 200_000);
        System.out.printf("simulation, exhaustive within %d deviation(s): %s: %s, %d ms%n", deviations, sim.config(),
                r, (System.nanoTime() - start) / 1_000_000);
        if (r.failed()) {
            throw new AssertionError("a schedule failed (" + sim.config() + "):\n"
                    + new Explorer(sim).shrink(r.failure(), 500).report());
        }
        assertThat(r.complete()).as("explored every schedule within the bound").isTrue();
        assertThat(r.schedules()).isGreaterThan(100);
        return r;
    }

    private static AssertionError failure(Simulation sim, long seed, Simulation.Outcome failed, int shrinkRuns) {
        Simulation.Outcome small = new Explorer(sim).shrink(failed, shrinkRuns);
        return new AssertionError("seed " + seed + " failed (" + sim.config() + "); shrunk to:\n"
                + small.report() + "\nreplay its choices with Chooser.script(" + small.choices() + ")");
    }
}
