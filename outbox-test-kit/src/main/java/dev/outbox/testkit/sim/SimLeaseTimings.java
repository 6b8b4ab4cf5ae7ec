package dev.outbox.testkit.sim;

import java.time.Duration;

/**
 * The timings of a simulated lease, derived from the engine's as {@code outbox-store-sql}'s {@code SqlLeaseTimings}
 * derives its defaults and checked against the same relations: renew interval <i>r</i> = heartbeat timeout / 4
 * (<i>2r + p ≤ hb</i>), acquire interval max(500 ms, poll interval), and — unlike the SQL default, which takes the
 * larger of that and three heartbeat timeouts — the shortest lease the SQL builder accepts, <i>L = hb + d + r</i>,
 * so that the simulation explores the edge of the relation that keeps a cut-off leader's sends from overlapping its
 * successor's. All in virtual nanoseconds.
 *
 * @param lease   how long a taken or renewed lease holds
 * @param renew   how often the holder renews, and the longest round trip that still confirms its heartbeats
 * @param acquire how often a standby tries to take the lease
 */
record SimLeaseTimings(long lease, long renew, long acquire) {
    private static final Duration MIN_ACQUIRE = Duration.ofMillis(500);

    /** The timings for a heartbeat timeout, poll interval and broker delivery timeout. */
    static SimLeaseTimings of(Duration heartbeatTimeout, Duration pollInterval, Duration deliveryTimeout) {
        long hb = heartbeatTimeout.toNanos();
        long p = pollInterval.toNanos();
        long r = hb / 4;
        if (2 * r + p > hb) {
            throw new IllegalArgumentException("the lease's renew interval " + r / 1_000_000 + " ms breaks 2r + p <= hb"
                    + " with the poll interval " + pollInterval.toMillis() + " ms and the heartbeat timeout "
                    + heartbeatTimeout.toMillis() + " ms");
        }
        long a = Math.max(MIN_ACQUIRE.toNanos(), p);
        return new SimLeaseTimings(hb + deliveryTimeout.toNanos() + r, r, a);
    }

    /**
     * About the longest a crashed leader holds the outbox, as {@code SqlLeaseTimings.crashTakeOver()}.
     *
     * @param pollInterval the engine's poll interval
     * @return lease + acquire + poll interval, in nanoseconds
     */
    long crashTakeOver(Duration pollInterval) {
        return lease + acquire + pollInterval.toNanos();
    }
}
