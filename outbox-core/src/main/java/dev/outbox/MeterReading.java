package dev.outbox;

import java.time.Duration;
import java.time.Instant;

/**
 * A periodic read of the dispatcher's throughput, sent to {@link DispatcherListener#meterRead}. Immutable.
 *
 * @param at            when it was read
 * @param window        the time since the previous read
 * @param sent          records handed to the broker in the window
 * @param acknowledged  records acknowledged by the broker and purged in the window
 * @param failed        deliveries that failed in the window (each retried later or parked)
 * @param parked        records parked in the window
 * @param inFlight      records sent and not yet completed, at the time of the read
 * @param totalAcknowledged records acknowledged since the dispatcher started
 */
public record MeterReading(Instant at, Duration window, long sent, long acknowledged, long failed, long parked,
                           int inFlight, long totalAcknowledged) {

    /**
     * Acknowledged records per second over the window.
     *
     * @return {@code acknowledged} divided by the window in seconds; 0 for an empty window
     */

    public double ratePerSecond() {
        long nanos = window.toNanos();
        return nanos <= 0 ? 0 : acknowledged * 1e9 / nanos;
    }
}
