package dev.outbox.testkit.sim;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.StoreException;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Leader election in the database for a simulation: {@code outbox-store-sql}'s {@code SqlLeaderTransport}, step for
 * step, over a {@link SimLeaseTable} and on the simulation's clock. A standby tries to take the lease every acquire
 * interval; the holder renews it every renew interval (at once when asked to {@link #reconfirm()}). Taking it →
 * {@link Listener#assigned()}; a renewal that finds it taken or expired, or renewals that failed for longer than the
 * lease → {@link Listener#lost()}. A heartbeat is passed back only by a renewal that began after it was published,
 * succeeded, and came back within the renew interval; closing releases the lease. Kept in step with the SQL
 * transport by hand (the test kit cannot depend on the SQL stores, whose tests depend on it): a change to one is a
 * change to both. Only the simulation's workers call it.
 */
final class SimLeaseTransport implements LeaderTransport {
    /** The lease row of an unsharded outbox. */
    static final int ROW = 1;

    private final SimScheduler sched;
    private final SimLeaseTable table;
    private final SimLeaseTimings timings;
    private final String name;
    private final Consumer<String> trace;

    private Listener listener;
    private boolean prepared;
    private int acquisitions;
    private String token;
    private boolean announced;
    private long confirmedFrom;
    private long nextAttempt;
    private Heartbeat pending;
    private boolean confirmRequested;

    SimLeaseTransport(SimScheduler sched, SimLeaseTable table, SimLeaseTimings timings, String name,
                      Consumer<String> trace) {
        this.sched = sched;
        this.table = table;
        this.timings = timings;
        this.name = name;
        this.trace = trace;
    }

    /** The token of the lease this member holds, or null. */
    String token() {
        return token;
    }

    @Override
    public void start(Listener listener) {
        if (this.listener != null) {
            throw new IllegalStateException(name + "'s lease transport is already started");
        }
        this.listener = Objects.requireNonNull(listener, "listener");
        nextAttempt = sched.nanoTime();
        prepare();
    }

    private boolean prepare() {
        if (!prepared) {
            try {
                table.createRows(name, List.of(ROW));
                prepared = true;
            } catch (StoreException e) {
                trace.accept(name + ": could not prepare the lease table");
            }
        }
        return prepared;
    }

    @Override
    public void poll(Duration timeout) {
        if (listener == null) {
            throw new IllegalStateException(name + "'s lease transport is not started");
        }
        long deadline = sched.nanoTime() + timeout.toNanos();
        long now = sched.nanoTime();
        if (now - nextAttempt >= 0 || token != null && confirmRequested) {
            nextAttempt = now + (token == null ? timings.acquire() : timings.renew());
            if (prepared || prepare()) {
                if (token == null) {
                    acquire(now);
                } else {
                    renew(now);
                }
            }
        }
        if (!Thread.currentThread().isInterrupted()) {
            sched.sleepUntil(deadline);
        }
    }

    private void acquire(long started) {
        String candidate = name + "#" + ++acquisitions;
        boolean taken;
        try {
            taken = table.acquire(name, ROW, candidate);
        } catch (StoreException e) {
            return;
        }
        if (!taken) {
            return;
        }
        token = candidate;
        announced = false;
        confirmedFrom = started;
        nextAttempt = started + timings.renew();
        if (quick(started)) {
            announce();
        } else {
            trace.accept(name + ": took the lease too slowly to announce it; the next quick renewal does");
        }
    }

    private void renew(long started) {
        Heartbeat proving = pending;
        boolean confirm = confirmRequested;
        confirmRequested = false;
        boolean renewed;
        try {
            renewed = table.renew(name, ROW, token);
        } catch (StoreException e) {
            confirmRequested |= confirm;
            if (sched.nanoTime() - confirmedFrom > timings.lease()) {
                trace.accept(name + ": its lease expired while it could not be renewed: lost");
                lose();
            }
            return;
        }
        if (!renewed) {
            trace.accept(name + ": its lease was taken or expired before it was renewed: lost");
            lose();
            return;
        }
        if (!quick(started)) {
            confirmRequested |= confirm;
            trace.accept(name + ": its renewal came back after the renew interval: it confirms nothing");
            return;
        }
        confirmedFrom = started;
        if (pending == proving) {
            pending = null;
        }
        if (!announced) {
            announce();
            return;
        }
        if (confirm) {
            listener.confirmed();
        }
        if (proving != null) {
            listener.heartbeat(proving);
        }
    }

    private boolean quick(long started) {
        return sched.nanoTime() - started <= timings.renew();
    }

    private void announce() {
        announced = true;
        pending = null;
        listener.assigned();
    }

    private void lose() {
        boolean was = announced;
        token = null;
        announced = false;
        pending = null;
        nextAttempt = sched.nanoTime() + timings.acquire();
        if (was) {
            listener.lost();
        }
    }

    @Override
    public void publish(Heartbeat heartbeat) {
        Objects.requireNonNull(heartbeat, "heartbeat");
        if (token != null && announced) {
            pending = heartbeat;
        }
    }

    @Override
    public boolean reconfirm() {
        confirmRequested = true;
        return true;
    }

    @Override
    public void close() {
        String held = token;
        token = null;
        announced = false;
        if (held != null) {
            try {
                table.release(name, ROW, held);
            } catch (StoreException e) {
                trace.accept(name + ": could not release its lease; it is taken once it expires");
            }
        }
    }

    @Override
    public String toString() {
        long now = sched.nanoTime();
        return name + (token == null ? "" : " holds " + token + (announced ? "" : " (unannounced)")
                + " confirmed " + (confirmedFrom - now)) + " next " + (nextAttempt - now)
                + (pending == null ? "" : " pending") + (confirmRequested ? " confirm" : "");
    }
}
