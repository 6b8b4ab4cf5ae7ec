package dev.outbox.internal;

import org.slf4j.Logger;
import org.slf4j.event.Level;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The log lines of one store operation that fails and is retried (the read, the mark, a purge, taking the epoch):
 * bounded however long the outage lasts. The first failure of an outage is a WARN with its stack trace; the
 * failures after it are DEBUG, and at most once a {@link #SUMMARY_EVERY minute} a WARN sums them up (how many, for
 * how long, the last error); the first success after them is an INFO saying how long the outage lasted and how many
 * failures it had. So a database that is down for an hour writes a handful of lines, not one stack trace per
 * retry.
 *
 * <p>Thread-safe; a success when nothing failed costs one volatile read.
 */
final class OutageLog {
    /** At most one summary line per operation in this time. */
    static final Duration SUMMARY_EVERY = Duration.ofMinutes(1);

    /** Where the lines go: the engine's logger, or a test's recorder. */
    interface Sink {
        /**
         * One line.
         *
         * @param level   its level
         * @param message the line
         * @param error   the stack trace to print with it, or null
         */
        void log(Level level, String message, Throwable error);
    }

    private final Sink sink;
    private final String name;
    private final String operation;
    private final EngineRuntime runtime;
    /** Failures since the last success; written under this object's lock. */
    private volatile int failures;
    private long firstNanos;
    private long lastSummaryNanos;

    OutageLog(Logger log, String name, String operation, EngineRuntime runtime) {
        this((level, message, error) -> log.atLevel(level).setCause(error).log(message), name, operation, runtime);
    }

    OutageLog(Sink sink, String name, String operation, EngineRuntime runtime) {
        this.sink = sink;
        this.name = name;
        this.operation = operation;
        this.runtime = runtime;
    }

    /**
     * The operation failed and will be tried again after {@code retryIn}.
     *
     * @param retryIn what the caller waits before the next try
     * @param error   the failure
     */
    synchronized void failed(Duration retryIn, Throwable error) {
        long now = runtime.nanoTime();
        int n = failures + 1;
        failures = n;
        if (n == 1) {
            firstNanos = now;
            lastSummaryNanos = now;
            sink.log(Level.WARN, name + ": " + operation + " failed; retrying in " + retryIn + " (while it keeps"
                    + " failing, a line sums the failures up once a minute)", error);
            return;
        }
        sink.log(Level.DEBUG, name + ": " + operation + " failed again (failure " + n + "); retrying in " + retryIn,
                error);
        if (now - lastSummaryNanos >= SUMMARY_EVERY.toNanos()) {
            lastSummaryNanos = now;
            sink.log(Level.WARN, name + ": " + operation + " still failing: " + n + " failures in "
                    + Duration.ofNanos(now - firstNanos).truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
                    + "; the last: " + EngineEvents.describe(error) + "; retrying in " + retryIn, null);
        }
    }

    /** The operation succeeded: ends an outage, if there was one, with one line. */
    void succeeded() {
        if (failures == 0) {
            return;
        }
        synchronized (this) {
            int n = failures;
            if (n == 0) {
                return;
            }
            failures = 0;
            long lasted = runtime.nanoTime() - firstNanos;
            sink.log(Level.INFO, name + ": " + operation + " works again after " + n + " failure(s) in "
                    + Duration.ofMillis(TimeUnit.NANOSECONDS.toMillis(lasted)), null);
        }
    }

    /**
     * The failures since the last success.
     *
     * @return how many
     */
    int failures() {
        return failures;
    }
}
