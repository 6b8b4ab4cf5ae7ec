package dev.outbox.store.sql;

import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;

import java.time.Duration;
import java.util.Objects;

/**
 * A cursor read's late-commit rule for a database that cannot tell an id whose writer is still open from one that
 * rolled back (MySQL, MariaDB, H2): a writer transaction is assumed to commit within the window of taking its ids.
 * The read's ordinals are milliseconds of a monotonic clock ({@link System#nanoTime()}, never the wall clock, which
 * can step): {@code horizon} the time before the read, {@code gapToken} the time after it plus the window. The
 * harvest thus rechecks an id it passed without seeing for at least the window after the read that passed it, then
 * takes it to have rolled back; a row committed later is published only by the harvest's next read from the head of
 * the table ({@code DispatcherConfig.rescanInterval}). Immutable and thread-safe.
 */
public final class LateCommitWindow {
    /** The default window. */
    public static final Duration DEFAULT = Duration.ofSeconds(60);
    /** The longest window. */
    public static final Duration MAX = Duration.ofDays(1);
    /** The origin of the monotonic clock. */
    private static final long CLOCK_ORIGIN = System.nanoTime();

    private final Duration window;
    private final long windowMillis;

    private LateCommitWindow(Duration window) {
        this.window = window;
        this.windowMillis = window.toMillis();
    }

    /**
     * The rule for {@code window}.
     *
     * @param window how long a passed id is rechecked; not null
     * @return the rule
     * @throws NullPointerException     if {@code window} is null
     * @throws IllegalArgumentException naming the bad value if it is below 1 ms or above {@link #MAX}
     */
    public static LateCommitWindow of(Duration window) {
        return new LateCommitWindow(check(window));
    }

    /**
     * {@code window}, checked: at least 1 ms, at most {@link #MAX}.
     *
     * @param window the window to check
     * @return {@code window} itself
     * @throws NullPointerException     if {@code window} is null
     * @throws IllegalArgumentException naming the bad value
     */
    public static Duration check(Duration window) {
        Objects.requireNonNull(window, "lateCommitWindow must not be null");
        if (window.compareTo(Duration.ofMillis(1)) < 0) {
            throw new IllegalArgumentException("lateCommitWindow must be at least 1 ms: " + window);
        }
        if (window.compareTo(MAX) > 0) {
            throw new IllegalArgumentException("lateCommitWindow must be at most " + MAX + ": " + window);
        }
        return window;
    }

    /**
     * The window.
     *
     * @return the window given to {@link #of(Duration)}
     */
    public Duration window() {
        return window;
    }

    /**
     * The horizon of a read that starts now: call it before the read.
     *
     * @return the current {@link #monotonicMillis()}
     */
    public long horizon() {
        return monotonicMillis();
    }

    /**
     * The result of a read of {@code rows} that began at {@code horizon}: call it after the read.
     *
     * @param rows    the rows the read returned
     * @param horizon what {@link #horizon()} returned before the read
     * @return the result, whose {@code gapToken} is the current monotonic time plus the window
     */
    public ReadResult result(MarkResult rows, long horizon) {
        return new ReadResult(rows, monotonicMillis() + windowMillis, horizon);
    }

    /**
     * Milliseconds of the monotonic clock the ordinals count, at least 1.
     *
     * @return milliseconds since this class was loaded, plus 1; comparable only within this JVM
     */

    public static long monotonicMillis() {
        return 1 + (System.nanoTime() - CLOCK_ORIGIN) / 1_000_000;
    }

    @Override
    public String toString() {
        return "LateCommitWindow{" + window + '}';
    }
}
