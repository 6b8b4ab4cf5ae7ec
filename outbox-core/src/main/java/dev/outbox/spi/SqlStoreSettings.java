package dev.outbox.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * Validation of the settings every SQL store's builder shares, so that each store rejects a bad value with the
 * same message. Stateless and thread-safe.
 */
public final class SqlStoreSettings {
    private static final long MAX_STATEMENT_TIMEOUT_MILLIS = Integer.MAX_VALUE / 2;

    private SqlStoreSettings() {
    }

    /**
     * Checks a store's statement timeout: at least 1 ms, and small enough for JDBC's int-valued timeouts.
     *
     * @param statementTimeout the timeout; not null, from 1 ms to {@code Integer.MAX_VALUE / 2} ms (about 12 days)
     * @return {@code statementTimeout}
     * @throws NullPointerException     if {@code statementTimeout} is null
     * @throws IllegalArgumentException naming the bad value
     */
    public static Duration statementTimeout(Duration statementTimeout) {
        Objects.requireNonNull(statementTimeout, "statementTimeout must not be null");
        if (statementTimeout.toMillis() < 1) {
            throw new IllegalArgumentException("statementTimeout must be at least 1 ms: " + statementTimeout);
        }
        if (statementTimeout.toMillis() > MAX_STATEMENT_TIMEOUT_MILLIS) {
            throw new IllegalArgumentException("statementTimeout must be at most "
                    + Duration.ofMillis(MAX_STATEMENT_TIMEOUT_MILLIS) + ": " + statementTimeout);
        }
        return statementTimeout;
    }

    /**
     * Checks the longest key, in characters, a store accepts: at least 1.
     *
     * @param maxKeyLength the longest key, in code points

     * @return {@code maxKeyLength}
     * @throws IllegalArgumentException naming the bad value
     */
    public static int maxKeyLength(int maxKeyLength) {
        if (maxKeyLength < 1) {
            throw new IllegalArgumentException("maxKeyLength must be at least 1: " + maxKeyLength);
        }
        return maxKeyLength;
    }
}
