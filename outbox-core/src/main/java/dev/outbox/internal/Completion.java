package dev.outbox.internal;

/**
 * A broker's answer for one record sent: {@code error} is null when it was acknowledged; {@code at} is the runtime's
 * monotonic time when it came; {@code refusedWrite} names the store write ("purge", "park", "retryLater") that was
 * refused for good while the completion waits among the held ones of {@link SettleLoop}, else null.
 */
record Completion(Flight flight, Throwable error, long at, String refusedWrite) {
    Completion(Flight flight, Throwable error, long at) {
        this(flight, error, at, null);
    }
}
