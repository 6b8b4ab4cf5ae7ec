package dev.outbox.testkit.sim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Objects;
import java.util.Map;

/**
 * Explores a {@link Simulation}: random runs by seed, every schedule up to a bound, and the shrinking of a
 * failing run to a short one. Not thread-safe.
 */
public final class Explorer {
    private final Simulation sim;
    private boolean stateHashing = true;

    /**
     * An explorer of {@code sim}, with state hashing on.
     *
     * @param sim the simulation whose runs it plays; not {@code null}
     * @throws NullPointerException if {@code sim} is {@code null}
     */
    public Explorer(Simulation sim) {
        this.sim = Objects.requireNonNull(sim, "sim");
    }

    /**
     * Turns state hashing off in {@link #exhaustive}: every schedule within the bound is run.
     *
     * @return this explorer
     */
    public Explorer withoutStateHashing() {
        stateHashing = false;
        return this;
    }

    // ------------------------------------------------------------------------------------------ random

    /**
     * The result of random runs: how many ran, and the first that failed (with its seed), if any.
     *
     * @param runs        how many runs were played, the failing one included
     * @param firstSeed   the seed of the first run
     * @param failingSeed the seed of the failing run, {@code null} if none failed
     * @param failure     the failing run, {@code null} if none failed
     * @param choices     the choices made in all the runs together
     */
    public record RandomResult(int runs, long firstSeed, Long failingSeed, Simulation.Outcome failure,
                               long choices) {
        /**
         * Whether a run failed.
         *
         * @return {@code true} if {@link #failure()} is not {@code null}
         */
        public boolean failed() {
            return failure != null;
        }
    }

    /**
     * Runs seeds {@code firstSeed .. firstSeed + count - 1}, stopping at the first failure.
     *
     * @param firstSeed the seed of the first run ({@link Chooser#random})
     * @param count     how many runs at most; zero or less runs none
     * @return how many ran and the first failure, whose {@link Simulation.Outcome#choices()} replays it
     */
    public RandomResult random(long firstSeed, int count) {
        long choices = 0;
        for (int i = 0; i < count; i++) {
            long seed = firstSeed + i;
            Simulation.Outcome o = sim.run(Chooser.random(seed));
            choices += o.choiceCount();
            if (o.failed()) {
                return new RandomResult(i + 1, firstSeed, seed, o, choices);
            }
        }
        return new RandomResult(count, firstSeed, null, null, choices);
    }

    // ------------------------------------------------------------------------------------------ exhaustive

    /**
     * The result of an exhaustive exploration: schedules run, distinct states seen, whether every schedule within
     * the bound was run (rather than the budget running out first), and the first failing run, if any.
     *
     * @param schedules the schedules run, the failing one included
     * @param states    the distinct states seen at the choices where schedules could branch
     * @param complete  whether every schedule within the bound was run; {@code false} if the budget or a failure
     *                  stopped the search
     * @param failure   the first failing run, {@code null} if none failed
     */
    public record ExhaustiveResult(long schedules, long states, boolean complete, Simulation.Outcome failure) {
        /**
         * Whether a run failed.
         *
         * @return {@code true} if {@link #failure()} is not {@code null}
         */
        public boolean failed() {
            return failure != null;
        }

        @Override
        public String toString() {
            if (failure != null) {
                return "FAILED at schedule " + schedules + " (" + states + " distinct states so far)";
            }
            return schedules + " schedules, " + states + " distinct states" + (complete ? ", every schedule within"
                    + " the bound" : ", stopped by the budget");
        }
    }

    /**
     * Runs every schedule that departs from the first option (the happy path: the environment acknowledges,
     * commits and writes at once, and the first runnable worker runs) at no more than {@code maxDeviations}
     * choices — delay-bounded search: every interleaving and every fault within the bound, wherever in the run it
     * falls, fewest deviations first. A schedule is not branched further at a choice where it reached a state that
     * an earlier schedule reached with no more deviations spent (state hashing: the store's rows, the broker's log
     * and pending sends, the writers, the group, the fault budgets, each dispatcher's leadership, schedule and
     * cursor, where in the code each worker stopped, the virtual time, and what the choice is about). Stops at the
     * first failure or after {@code maxSchedules}.
     *
     * @param maxDeviations the bound: the most choices per schedule that do not take the first option (the
     *                      number of schedules grows steeply with it; 2 or 3 is typical)
     * @param maxSchedules  the budget: the most schedules to run
     * @return the schedules run, the states seen, whether the search completed, and the first failure
     */
    public ExhaustiveResult exhaustive(int maxDeviations, long maxSchedules) {
        Map<String, Integer> seen = new HashMap<>(); // state -> the fewest deviations it was reached with
        java.util.ArrayDeque<List<int[]>> frontier = new java.util.ArrayDeque<>();
        frontier.add(List.of());
        long schedules = 0;
        while (!frontier.isEmpty()) {
            if (schedules >= maxSchedules) {
                return new ExhaustiveResult(schedules, seen.size(), false, null);
            }
            List<int[]> deviations = frontier.poll();
            int spent = deviations.size();
            int from = deviations.isEmpty() ? 0 : deviations.get(spent - 1)[0] + 1;
            boolean[] branch = new boolean[1];
            List<Boolean> branchAt = new ArrayList<>();
            int[] index = {0};
            Simulation.Outcome o = sim.run(deviating(deviations), state -> {
                int i = index[0]++;
                boolean b = false;
                if (i >= from && spent < maxDeviations) {
                    Integer at = stateHashing ? seen.get(state) : null;
                    if (at == null || at > spent) {
                        seen.put(state, spent);
                        b = true;
                    }
                }
                branchAt.add(b);
            });
            schedules++;
            if (o.failed()) {
                return new ExhaustiveResult(schedules, seen.size(), false, o);
            }
            List<Integer> options = o.options();
            for (int i = from; i < options.size() && i < branchAt.size(); i++) {
                if (!branchAt.get(i)) {
                    continue;
                }
                for (int v = 1; v < options.get(i); v++) {
                    List<int[]> child = new ArrayList<>(deviations);
                    child.add(new int[] {i, v});
                    frontier.add(child);
                }
            }
        }
        return new ExhaustiveResult(schedules, seen.size(), true, null);
    }

    /** The first option everywhere, but the given (index, option) pairs. */
    private static Chooser deviating(List<int[]> deviations) {
        Map<Integer, Integer> at = new HashMap<>();
        for (int[] d : deviations) {
            at.put(d[0], d[1]);
        }
        return new Chooser() {
            @Override
            protected int pick(int index, int n) {
                return Math.min(at.getOrDefault(index, 0), n - 1);
            }
        };
    }

    // ------------------------------------------------------------------------------------------ shrinking

    /**
     * Shrinks a failing run: deletes choices and lowers them while the run still breaks the same guarantee,
     * preferring fewer steps. Returns the smallest failing run found within {@code maxRuns} replays.
     *
     * @param failing a failed run of this explorer's simulation
     * @param maxRuns the most replays to try
     * @return a failed run breaking the same guarantee, with a trace no longer than {@code failing}'s;
     *         {@code failing} itself if nothing smaller was found
     * @throws IllegalArgumentException if {@code failing} did not fail
     */
    public Simulation.Outcome shrink(Simulation.Outcome failing, int maxRuns) {
        if (!failing.failed()) {
            throw new IllegalArgumentException("the run did not fail");
        }
        String kind = kind(failing);
        Simulation.Outcome best = failing;
        int runs = 0;
        boolean improved = true;
        while (improved && runs < maxRuns) {
            improved = false;
            // 1. lower each choice (the first option is the happy path), from the last
            for (int at = best.choices().size() - 1; at >= 0 && runs < maxRuns; at--) {
                if (at >= best.choices().size()) {
                    continue;
                }
                int v = best.choices().get(at);
                for (int lower = 0; lower < v && runs < maxRuns; lower = lower == 0 && v > 1 ? v - 1 : v) {
                    List<Integer> cand = new ArrayList<>(best.choices());
                    cand.set(at, lower);
                    runs++;
                    Simulation.Outcome o = sim.run(Chooser.script(cand));
                    if (o.failed() && kind(o).equals(kind) && smaller(o, best)) {
                        best = o;
                        improved = true;
                        break;
                    }
                }
            }
            // 2. delete chunks, large to small
            for (int size = Math.max(1, best.choices().size() / 4); size >= 1 && runs < maxRuns; size /= 2) {
                for (int at = 0; at + size <= best.choices().size() && runs < maxRuns; ) {
                    List<Integer> cand = new ArrayList<>(best.choices());
                    cand.subList(at, at + size).clear();
                    runs++;
                    Simulation.Outcome o = sim.run(Chooser.script(cand));
                    if (o.failed() && kind(o).equals(kind) && smaller(o, best)) {
                        best = o;
                        improved = true;
                    } else {
                        at += size;
                    }
                }
            }
        }
        return best;
    }

    private static boolean smaller(Simulation.Outcome a, Simulation.Outcome b) {
        if (a.trace().size() != b.trace().size()) {
            return a.trace().size() < b.trace().size();
        }
        if (a.choices().size() != b.choices().size()) {
            return a.choices().size() < b.choices().size();
        }
        for (int i = 0; i < a.choices().size(); i++) {
            int d = Integer.compare(a.choices().get(i), b.choices().get(i));
            if (d != 0) {
                return d < 0;
            }
        }
        return false;
    }

    /** The guarantee a run broke first ("G2", ...), or its first line. */
    static String kind(Simulation.Outcome o) {
        String v = o.violations().get(0);
        int g = v.indexOf("] G");
        return g >= 0 ? v.substring(g + 2, g + 4) : v.substring(Math.min(v.length(), 12));
    }
}
