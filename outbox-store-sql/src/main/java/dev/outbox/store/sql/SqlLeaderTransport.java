package dev.outbox.store.sql;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.StoreException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;

/**
 * Leader election in the database the outbox lives in, for deployments without Kafka: a lease row in the outbox's
 * lease table ({@code <table>_lease}) that the leader renews and a standby takes once it expired, the expiry
 * measured on the database's clock only. Taking the lease increments, in the same transaction, the leader epoch that
 * storage fencing checks (the leader table's row), so from that moment a deposed leader's purges, failure records,
 * parks and marks are refused by the database, exactly as with any other election.
 *
 * <pre>{@code
 * SqlLeaderTransport transport = SqlLeaderTransport.builder(store)   // PostgresStore, MySqlStore, H2Store
 *         .dispatcherConfig(config)        // heartbeat timeout and poll interval of the dispatcher
 *         .deliveryTimeout(Duration.ofSeconds(8))   // the outbox broker's delivery timeout
 *         .build();
 * Dispatcher dispatcher = Dispatcher.builder(store, broker).leaderTransport(transport).config(config).build();
 * }</pre>
 *
 * <h2>How it maps onto NELI</h2>
 * Taking the lease → {@link Listener#assigned()}; a renewal that finds the lease taken or expired →
 * {@link Listener#lost()}. A heartbeat the dispatcher publishes is passed back ({@link Listener#heartbeat}) only by a
 * renewal that began after it was published, succeeded, and came back within the renew interval: the core's state
 * machine then fences a leader whose renewals stop succeeding (the database is unreachable, the process was paused)
 * within its heartbeat timeout, long before a standby may take the lease ({@link SqlLeaseTimings}).
 * {@link #reconfirm()} is answered by the next renewal. Closing releases the lease, so a standby takes over at its
 * next try (the acquire interval); the dispatcher closes the transport only after it drained.
 *
 * <h2>Timings</h2>
 * See {@link SqlLeaseTimings}: the lease duration, the renew interval and the acquire interval, their relations to
 * the dispatcher's heartbeat timeout and poll interval and to the broker's delivery timeout, checked by
 * {@link Builder#build()}, which names the setting that breaks one. A crash costs about
 * {@link SqlLeaseTimings#crashTakeOver()}, a clean close about {@link SqlLeaseTimings#cleanHandOver()}.
 *
 * <h2>The lease table</h2>
 * {@link #start} creates it if it is missing ({@link Builder#createTable(boolean)}) and adds the lease's row. If the
 * database cannot be reached, {@link #start} does not fail: {@link #poll} tries again, every acquire interval. Each
 * renewal and each try of a standby is one single-row update on its own connection from the store's pool, bounded by
 * {@link SqlLeaseTimings#statementTimeout()} (a JDBC query timeout, in whole seconds rounded up).
 *
 * <p>Not thread-safe, as the {@link LeaderTransport} port allows: {@link #start}, {@link #poll}, {@link #publish},
 * {@link #close} and every listener callback run on the dispatcher's leader thread; {@link #reconfirm()},
 * {@link #isAssigned()} and {@link #timings()} are safe from any thread.
 */
public final class SqlLeaderTransport implements LeaderTransport {
    private static final Logger log = LoggerFactory.getLogger(SqlLeaderTransport.class);

    private final SqlLease lease;
    private final SqlLeaseTimings timings;
    private final int row;
    private final List<String> takeEpoch;
    private final boolean createTable;
    private final String name;

    private Listener listener;
    private boolean prepared;
    /** The holder token of the lease this instance holds (a fresh one per acquisition), or null. */
    private volatile String token;
    /** Whether {@link Listener#assigned()} was delivered for the lease held. */
    private boolean announced;
    /** When the last renewal (or the acquisition) that confirmed the lease began, on the monotonic clock. */
    private long confirmedFrom;
    private long nextAttempt;
    /** The newest heartbeat published and not yet confirmed by a renewal. */
    private Heartbeat pending;
    private volatile boolean confirmRequested;
    private boolean warned;

    private SqlLeaderTransport(Builder builder) {
        this.timings = builder.timings();
        this.lease = new SqlLease(builder.store, builder.statements, timings.statementTimeout(), timings.leaseDuration());
        this.row = builder.store.sqlTable().leaderRow();
        this.takeEpoch = builder.store.fencing() ? builder.store.sqlStatements().takeEpoch() : List.of();
        this.createTable = builder.createTable;
        this.name = lease.table() + " row " + row;
    }

    /**
     * Starts a builder for a lease hosted by {@code store}'s database, next to its outbox table.
     *
     * @param store the outbox's store, unsharded (a sharded outbox takes a sharded transport); not null
     * @return a new builder with the defaults
     * @throws NullPointerException     if {@code store} is null
     * @throws IllegalArgumentException if the store cannot host a lease, or is sharded
     */
    public static Builder builder(SqlStore store) {
        return new Builder(store);
    }

    /**
     * The DDL of the lease table, for a database user that may not create tables ({@link Builder#createTable(boolean)
     * createTable(false)}): run it once, with the application's migrations. Idempotent.
     *
     * @return the statements, each ended by {@code ;}
     */
    public String schemaSql() {
        return lease.schemaSql();
    }

    /**
     * The checked timings and what they cost.
     *
     * @return the timings this transport runs with
     */
    public SqlLeaseTimings timings() {
        return timings;
    }

    /**
     * Whether this instance holds the lease; safe from any thread.
     *
     * @return true from a successful acquisition until the lease is found lost, or released on close
     */
    public boolean isAssigned() {
        return token != null;
    }

    @Override
    public void start(Listener listener) {
        if (this.listener != null) {
            throw new IllegalStateException("the lease transport of " + name + " is already started");
        }
        this.listener = Objects.requireNonNull(listener, "listener");
        nextAttempt = System.nanoTime();
        prepare();
    }

    private boolean prepare() {
        if (!prepared) {
            try {
                lease.createRows(List.of(row), createTable);
                prepared = true;
                log.info("joined the leader election on {} (lease {} ms, renewed every {} ms)", name,
                        timings.leaseDuration().toMillis(), timings.renewInterval().toMillis());
            } catch (StoreException e) {
                warn("could not prepare the lease table", e);
            }
        }
        return prepared;
    }

    /**
     * Takes the lease if it is free or expired (a standby, every acquire interval) or renews it (the holder, every
     * renew interval), delivers what that found to the listener, and waits out the rest of {@code timeout}.
     */
    @Override
    public void poll(Duration timeout) {
        if (listener == null) {
            throw new IllegalStateException("the lease transport of " + name + " is not started");
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        long now = System.nanoTime();
        if (now - nextAttempt >= 0 || token != null && confirmRequested) {
            nextAttempt = now + (token == null ? timings.acquireInterval() : timings.renewInterval()).toNanos();
            if (prepared || prepare()) {
                if (token == null) {
                    acquire(now);
                } else {
                    renew(now);
                }
            }
        }
        for (long left = deadline - System.nanoTime(); left > 0 && !Thread.currentThread().isInterrupted();
             left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(this, left);
        }
    }

    private void acquire(long started) {
        String candidate = UUID.randomUUID().toString();
        boolean taken;
        try {
            taken = lease.acquire(row, candidate, takeEpoch);
        } catch (StoreException e) {
            warn("could not try to take the lease", e);
            return;
        }
        warned = false;
        if (!taken) {
            return;
        }
        token = candidate;
        announced = false;
        confirmedFrom = started;
        nextAttempt = started + timings.renewInterval().toNanos();
        log.info("took the lease {}{}", name, takeEpoch.isEmpty() ? "" : " and the next leader epoch");
        if (quick(started)) {
            announce();
        } // else: the next quick renewal announces it
    }

    private void renew(long started) {
        Heartbeat proving = pending;
        boolean confirm = confirmRequested;
        confirmRequested = false;
        boolean renewed;
        try {
            renewed = lease.renew(row, token);
        } catch (StoreException e) {
            confirmRequested |= confirm;
            warn("could not renew the lease", e);
            if (System.nanoTime() - confirmedFrom > timings.leaseDuration().toNanos()) {
                log.warn("the lease {} expired while it could not be renewed: lost", name);
                lose();
            }
            return;
        }
        warned = false;
        if (!renewed) {
            log.warn("the lease {} was taken by another instance or expired before it was renewed: lost", name);
            lose();
            return;
        }
        if (!quick(started)) {
            confirmRequested |= confirm;
            log.debug("renewing the lease {} took longer than the renew interval: it confirms nothing", name);
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

    /** Whether what began at {@code started} came back within the renew interval. */
    private boolean quick(long started) {
        return System.nanoTime() - started <= timings.renewInterval().toNanos();
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
        nextAttempt = System.nanoTime() + timings.acquireInterval().toNanos();
        if (was) {
            listener.lost();
        }
    }

    private void warn(String what, StoreException e) {
        if (!warned) {
            log.warn("{} {} (will keep trying): {}", what, name, e.getMessage());
            warned = true;
        } else {
            log.debug("{} {}", what, name, e);
        }
    }

    /** Keeps the newest heartbeat for the next renewal to confirm; dropped unless this instance holds the lease. */
    @Override
    public void publish(Heartbeat heartbeat) {
        Objects.requireNonNull(heartbeat, "heartbeat");
        if (token != null && announced) {
            pending = heartbeat;
        }
    }

    /** Answered by the next renewal: {@link Listener#confirmed()} if it still holds the lease, else lost. */
    @Override
    public boolean reconfirm() {
        confirmRequested = true;
        return true;
    }

    /** Releases the lease if held (a standby takes it at its next try) and leaves. Idempotent. */
    @Override
    public void close() {
        String held = token;
        token = null;
        announced = false;
        if (held != null) {
            try {
                lease.release(row, held);
                log.info("released the lease {}", name);
            } catch (StoreException e) {
                log.warn("could not release the lease {}; a standby takes it once it expires: {}", name,
                        e.getMessage());
            }
        }
    }

    /**
     * The holder of the lease right now, as the database sees it, for operators and tests.
     *
     * @return the unexpired holder's token, or empty if the lease is free or expired
     */
    public Optional<String> holder() {
        return lease.holder(row);
    }

    @Override
    public String toString() {
        return "SqlLeaderTransport{" + name + ", assigned=" + isAssigned() + '}';
    }

    /**
     * Builds a {@link SqlLeaderTransport}; checks the timings on {@link #build()}. Not thread-safe.
     */
    public static final class Builder extends SqlLeaseBuilder<Builder> {
        private Builder(SqlStore store) {
            super(store);
            if (store.shards() > 1) {
                throw new IllegalArgumentException(store + " has " + store.shards() + " shards: its dispatchers"
                        + " elect shard leaders (SqlShardedLeaderTransport), not one leader");
            }
        }

        /**
         * Checks the timings; opens no connection (that is {@link SqlLeaderTransport#start}'s work).
         *
         * @return a new transport, not started
         * @throws IllegalArgumentException if the timings break a relation of {@link SqlLeaseTimings} (the message
         *                                  names the setting, its value and the bound)
         */
        public SqlLeaderTransport build() {
            return new SqlLeaderTransport(this);
        }
    }
}
