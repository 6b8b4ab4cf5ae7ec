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

    /** A choice in {@code [0, n)}, {@code n >= 2}, of what {@code label} says ("schedule", "env: ack|idle|..."). */
    public final int choose(int n, String label) {
        this.label = label;
        int c = pick(made.size(), n);
        made.add(c);
        options.add(n);
        labels.add(label);
        return c;
    }

    /** What the choice being made is about: for choosers that steer by it. */
    protected final String label() {
        return label;
    }

    /** What each choice was about. */
    public final List<String> labels() {
        return List.copyOf(labels);
    }

    protected abstract int pick(int index, int n);

    /** The choices made so far, in order. */
    public final List<Integer> made() {
        return List.copyOf(made);
    }

    /** How many options each choice had. */
    public final List<Integer> options() {
        return List.copyOf(options);
    }

    /** Seeded random choices. */
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
