package dev.outbox.store.sql;

import java.time.Duration;
import java.util.Objects;

/**
 * The timings of leader election in the database, derived and checked once ({@link #of}), and what they cost: how
 * long a crashed leader's lease holds the outbox, and how long a clean hand-over takes. The relations, where
 * <i>hb</i> is the dispatcher's heartbeat timeout, <i>p</i> its poll interval, <i>d</i> the outbox broker's delivery
 * timeout (how long a send may still land after the leader stopped sending), <i>r</i> the renew interval and
 * <i>L</i> the lease duration:
 * <ul>
 *   <li><i>2r + p ≤ hb</i>. A renewal confirms the leader's heartbeats only if it came back within <i>r</i> of its
 *       start; renewals start every <i>r</i> (checked every poll), so a healthy leader hears a confirmation at least
 *       every <i>2r + p</i> and never fences itself while it holds the lease.</li>
 *   <li><i>L ≥ hb + d + r</i>. A renewal that started at <i>s</i> extends the lease to at least <i>s + L</i> on the
 *       database's clock; the leader counts its own lease from the confirmation, at most <i>s + r</i>, and fences
 *       itself <i>hb</i> later; its last sends have settled <i>d</i> after that. So a standby, which may take the
 *       lease only once it expired, never starts before a cut-off leader stopped and its sends landed.</li>
 * </ul>
 * Defaults: <i>r</i> = <i>hb</i> / 4, <i>L</i> = max(3 × <i>hb</i>, <i>hb + d + r</i>) (15 s with the dispatcher's
 * defaults and an 8 s delivery timeout), and standbys try to take a free or expired lease every 500 ms (at least every
 * poll interval). Only durations are measured by an instance, on its monotonic clock; every expiry is compared with
 * the database's clock, in SQL.
 *
 * @param heartbeatTimeout the dispatcher's heartbeat timeout
 * @param pollInterval     the dispatcher's poll interval (how often the transport is polled)
 * @param deliveryTimeout  the outbox broker's delivery timeout
 * @param leaseDuration    how long a lease holds after its last renewal began, on the database's clock
 * @param renewInterval    how often the holder renews, and the longest round trip of a renewal that still confirms
 *                         the holder's heartbeats (and the statements' timeout)
 * @param acquireInterval  how often a standby tries to take the lease
 */
public record SqlLeaseTimings(Duration heartbeatTimeout, Duration pollInterval, Duration deliveryTimeout,
                              Duration leaseDuration, Duration renewInterval, Duration acquireInterval) {
    /** How often a standby tries to take a free or expired lease, unless set: 500 ms. */
    public static final Duration DEFAULT_ACQUIRE_INTERVAL = Duration.ofMillis(500);

    /**
     * Checks the relations in the class description.
     *
     * @param heartbeatTimeout the heartbeat timeout; positive
     * @param pollInterval     the poll interval; positive
     * @param deliveryTimeout  the delivery timeout; positive
     * @param leaseDuration    the lease duration; positive
     * @param renewInterval    the renew interval; positive
     * @param acquireInterval  the acquire interval; positive
     * @throws NullPointerException     if a component is null
     * @throws IllegalArgumentException naming the setting, its value, the bound and why, if a relation does not hold
     */
    public SqlLeaseTimings {
        positive("heartbeatTimeout", heartbeatTimeout);
        positive("pollInterval", pollInterval);
        positive("deliveryTimeout", deliveryTimeout);
        positive("leaseDuration", leaseDuration);
        positive("renewInterval", renewInterval);
        positive("acquireInterval", acquireInterval);
        long hb = heartbeatTimeout.toMillis();
        long p = pollInterval.toMillis();
        long r = renewInterval.toMillis();
        if (2 * r + p > hb) {
            throw new IllegalArgumentException("renewInterval (" + r + " ms) must be at most (heartbeatTimeout ("
                    + hb + " ms) - pollInterval (" + p + " ms)) / 2 = " + Math.max(0, (hb - p) / 2) + " ms: a leader"
                    + " must hear its lease renewed well within its heartbeat timeout, or it fences itself while it"
                    + " holds the lease");
        }
        long min = hb + deliveryTimeout.toMillis() + r;
        if (leaseDuration.toMillis() < min) {
            throw new IllegalArgumentException("leaseDuration (" + leaseDuration.toMillis() + " ms) must be at least"
                    + " heartbeatTimeout (" + hb + " ms) + deliveryTimeout (" + deliveryTimeout.toMillis()
                    + " ms) + renewInterval (" + r + " ms) = " + min + " ms: another instance must not take the lease"
                    + " before a cut-off leader has fenced itself and its last sends have settled");
        }
    }

    /**
     * The timings with the unset ones derived from the others (see the class description), checked.
     *
     * @param heartbeatTimeout the dispatcher's heartbeat timeout; positive
     * @param pollInterval     the dispatcher's poll interval; positive
     * @param deliveryTimeout  the broker's delivery timeout; positive
     * @param leaseDuration    the lease duration, or null for the default
     * @param renewInterval    the renew interval, or null for the default
     * @param acquireInterval  the acquire interval, or null for the default
     * @return the checked timings
     * @throws IllegalArgumentException naming the setting if a relation does not hold
     */
    public static SqlLeaseTimings of(Duration heartbeatTimeout, Duration pollInterval, Duration deliveryTimeout,
                                     Duration leaseDuration, Duration renewInterval, Duration acquireInterval) {
        positive("heartbeatTimeout", heartbeatTimeout);
        positive("pollInterval", pollInterval);
        positive("deliveryTimeout", deliveryTimeout);
        Duration r = renewInterval != null ? renewInterval : heartbeatTimeout.dividedBy(4);
        Duration l = leaseDuration;
        if (l == null) {
            Duration min = heartbeatTimeout.plus(deliveryTimeout).plus(r);
            Duration thrice = heartbeatTimeout.multipliedBy(3);
            l = min.compareTo(thrice) > 0 ? min : thrice;
        }
        Duration a = acquireInterval;
        if (a == null) {
            a = DEFAULT_ACQUIRE_INTERVAL.compareTo(pollInterval) > 0 ? DEFAULT_ACQUIRE_INTERVAL : pollInterval;
        }
        return new SqlLeaseTimings(heartbeatTimeout, pollInterval, deliveryTimeout, l, r, a);
    }

    /**
     * How long a lease statement may take before it is given up: the renew interval, but at least a second (the
     * JDBC query timeout has whole seconds, and the connection's network timeout is twice it). A renewal that takes
     * longer than the renew interval confirms nothing anyway.
     *
     * @return max(renewInterval, 1 s)
     */
    public Duration statementTimeout() {
        return renewInterval.compareTo(Duration.ofSeconds(1)) > 0 ? renewInterval : Duration.ofSeconds(1);
    }

    /**
     * About the longest a crashed leader holds the outbox: its lease runs out, then a standby's next attempt (at most
     * an acquire interval and a poll later) takes it.
     *
     * @return leaseDuration + acquireInterval + pollInterval
     */
    public Duration crashTakeOver() {
        return leaseDuration.plus(acquireInterval).plus(pollInterval);
    }

    /**
     * About the longest a clean hand-over takes after the leader closed (its lease is released on close): a
     * standby's next attempt.
     *
     * @return acquireInterval + pollInterval
     */
    public Duration cleanHandOver() {
        return acquireInterval.plus(pollInterval);
    }

    /**
     * Checks that {@code value} is set and positive.
     *
     * @param name  the setting's name, for the message
     * @param value the value
     * @return {@code value}
     * @throws NullPointerException     naming the setting if {@code value} is null
     * @throws IllegalArgumentException naming the setting if {@code value} is zero or negative, or below a
     *                                  millisecond
     */
    static Duration positive(String name, Duration value) {
        Objects.requireNonNull(value, name + " must not be null");
        if (value.toMillis() < 1) {
            throw new IllegalArgumentException(name + " must be at least 1 ms, was " + value);
        }
        return value;
    }
}
