package dev.outbox.testkit.sim;

import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A {@link SimScheduler}'s stops: the whole-process pauses of its workers (a paused worker runs again at a virtual
 * time) and the cut-offs that end a run unfinished (more choices than allowed, or virtual time past its limit).
 * Used only by the worker holding the scheduler's baton.
 */
final class SimStops {
    private final long maxChoices;
    private final long timeLimitNanos;
    /** Per worker, the virtual time until which it is paused; a worker never paused is absent (0). */
    private final Map<SimScheduler.Task, Long> pausedUntil = new IdentityHashMap<>();

    /**
     * @param maxChoices     the run ends, unfinished, after this many choices
     * @param timeLimitNanos the run ends, unfinished, when virtual time would pass this
     */
    SimStops(long maxChoices, long timeLimitNanos) {
        this.maxChoices = maxChoices;
        this.timeLimitNanos = timeLimitNanos;
    }

    /** Keeps {@code worker} from running until virtual time {@code until} (or later, if paused longer already). */
    void pause(SimScheduler.Task worker, long until) {
        pausedUntil.put(worker, Math.max(pausedUntil(worker), until));
    }

    /** The virtual time until which {@code worker} is paused: 0 if it never was. */
    long pausedUntil(SimScheduler.Task worker) {
        Long until = pausedUntil.get(worker);
        return until == null ? 0 : until;
    }

    /** Why the run ends after its {@code choices}-th choice, or null if it goes on. */
    String choiceCutOff(long choices) {
        return choices > maxChoices ? "more than " + maxChoices + " choices" : null;
    }

    /**
     * Why the run ends rather than move virtual time to {@code wake} (followed by the worker states), or null if it
     * may.
     */
    String timeCutOff(long wake) {
        return wake > timeLimitNanos
                ? "virtual time limit of " + TimeUnit.NANOSECONDS.toMillis(timeLimitNanos) + " ms reached: " : null;
    }
}
