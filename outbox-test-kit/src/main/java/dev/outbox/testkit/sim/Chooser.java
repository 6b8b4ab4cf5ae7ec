package dev.outbox.testkit.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Makes a simulation's choices: which worker runs next, which action the environment takes. A run is a function
 * of its choices, so the list of choices made ({@link #made()}) replays it exactly. Not thread-safe (a run makes
 * its choices one at a time).
 */
public abstract class Chooser {
    private final List<Integer> made = new ArrayList<>();
    private final List<Integer> options = new ArrayList<>();
    private final List<String> labels = new ArrayList<>();
    private String label = "";

    /**
     * A choice in {@code [0, n)}, {@code n >= 2}, of what {@code label} says ("schedule", "env: ack|idle|...").
     * Records the choice, its options and its label.
     *
     * @param n     the number of options, at least 2 (a point with one option is no choice and is not asked)
     * @param label what the choice is about, for traces and for choosers that steer by it
     * @return the option taken, from 0 to {@code n - 1}, as {@link #pick} returned it
     */
    public final int choose(int n, String label) {
        this.label = label;
        int c = pick(made.size(), n);
        made.add(c);
        options.add(n);
        labels.add(label);
        return c;
    }

    /**
     * What the choice being made is about: for choosers that steer by it.
     *
     * @return the label of the current (or, between choices, the last) choice; empty before the first
     */
    protected final String label() {
        return label;
    }

    /**
     * What each choice was about.
     *
     * @return an immutable copy of the labels of the choices made so far, in order
     */
    public final List<String> labels() {
        return List.copyOf(labels);
    }

    /**
     * Picks one option; the strategy of a chooser. {@link #label()} tells what the choice is about.
     *
     * @param index the choice's number in the run, from 0
     * @param n     the number of options, at least 2
     * @return the option taken; must be from 0 to {@code n - 1}, and the same for the same choices before it if
     *         runs are to be replayed
     */
    protected abstract int pick(int index, int n);

    /**
     * The choices made so far, in order.
     *
     * @return an immutable copy of the options taken; {@link #script} of it replays the run
     */
    public final List<Integer> made() {
        return List.copyOf(made);
    }

    /**
     * How many options each choice had.
     *
     * @return an immutable copy of each choice's option count, in order
     */
    public final List<Integer> options() {
        return List.copyOf(options);
    }

    /**
     * Seeded random choices.
     *
     * @param seed the seed of its {@link Random}: the same seed gives the same run
     * @return a new chooser taking each option with equal probability
     */
    public static Chooser random(long seed) {
        Random r = new Random(seed);
        return new Chooser() {
            @Override
            protected int pick(int index, int n) {
                return r.nextInt(n);
            }
        };
    }

    /**
     * The given choices first (each clamped to the options there are), then always the first option: replays a
     * recorded run, and runs a shrunk or enumerated prefix.
     *
     * @param prefix the options to take first, in order (for example an {@link Simulation.Outcome#choices()});
     *               copied; no {@code null} element
     * @return a new chooser that plays {@code prefix}, then takes option 0
     */
    public static Chooser script(List<Integer> prefix) {
        List<Integer> p = List.copyOf(prefix);
        return new Chooser() {
            @Override
            protected int pick(int index, int n) {
                return index < p.size() ? Math.min(p.get(index), n - 1) : 0;
            }
        };
    }
}
