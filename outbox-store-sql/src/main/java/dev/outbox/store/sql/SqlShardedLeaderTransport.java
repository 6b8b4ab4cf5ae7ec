package dev.outbox.store.sql;

import dev.outbox.OutboxShards;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.spi.StoreException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * Shard leadership in the database, for a sharded outbox without Kafka: one lease row per shard in the outbox's lease
 * table ({@code shard + 1}, as the leader table numbers the shards' epochs), each taken, renewed and released as
 * {@link SqlLeaderTransport} does its one row — on the database's clock, and taking a shard's lease increments that
 * shard's storage-fencing epoch in the same transaction.
 *
 * <pre>{@code
 * SqlShardedLeaderTransport transport = SqlShardedLeaderTransport.builder(store)   // a store with shards(n)
 *         .dispatcherConfig(config)
 *         .deliveryTimeout(Duration.ofSeconds(8))
 *         .build();
 * Dispatcher dispatcher = Dispatcher.builder(store, broker).leaderTransport(transport).config(config).build();
 * }</pre>
 *
 * <h2>Balancing: lease taking, as Kinesis' client library does it</h2>
 * There is no coordinator: every member reads the lease table every acquire interval and decides for itself, as a
 * KCL worker does over its lease table. The live members are the holders of unexpired leases, the members whose
 * request for one still holds, and this member; with
 * <i>w</i> of them, a member's fair share is ⌊<i>N</i>/<i>w</i>⌋ to ⌈<i>N</i>/<i>w</i>⌉ of the <i>N</i> shards.
 * <ul>
 *   <li>A member takes free or expired leases while it holds fewer than ⌈<i>N</i>/<i>w</i>⌉.</li>
 *   <li>A member below ⌊<i>N</i>/<i>w</i>⌋ with no free lease to take asks the busiest member (if it holds at least
 *       two more) for one of its shards: it marks that lease as wanted. Unlike KCL, it never steals a live lease: the
 *       owner would go on sending until it noticed. The request lapses a lease after it was made unless the member
 *       renews it, which it does every acquire interval while it is still short: a member that crashed stops
 *       counting as a member within a lease (one that closes withdraws its request at once), and the others take
 *       their share of what is free.</li>
 *   <li>An owner above ⌊<i>N</i>/<i>w</i>⌋ gives up the shards asked of it: it revokes them
 *       ({@link Listener#revoked}, which returns once their harvests drained) and only then releases their leases,
 *       which stay reserved for the member that asked until its request lapses (then anyone may take them): it
 *       takes them at its next try.</li>
 * </ul>
 * So a newcomer gets its share one shard per acquire interval or so, a member that leaves cleanly releases its
 * leases and withdraws its request at once (it stops counting as a member), and a crashed member's leases are taken
 * once they expire, by then it has fenced itself. Why this
 * scheme: it needs nothing but the lease table (no membership table, no coordinator to elect), every step is one
 * conditional single-row update, and a hand-over is either a drain before a release or an expiry — the two cases the
 * unsharded lease already proves.
 *
 * <h2>Renewals and heartbeats</h2>
 * One statement renews all of this member's leases every renew interval; it confirms each shard's heartbeats
 * published before it began, if it came back within the renew interval. A lease found taken or expired →
 * {@link Listener#lost}. {@link #reconfirm()} is answered by the next renewal ({@link Listener#confirmed}).
 * The timings are {@link SqlLeaseTimings}', checked by {@link Builder#build()}.
 *
 * <p>Thread-safety: {@link #start}, {@link #poll}, {@link #close} and every listener callback run on the dispatcher's
 * shard poller; {@link #publish}, {@link #reconfirm()}, {@link #assignedShards()} and the getters are safe from any
 * thread.
 */
public final class SqlShardedLeaderTransport implements ShardedLeaderTransport {
    private static final Logger log = LoggerFactory.getLogger(SqlShardedLeaderTransport.class);

    private final SqlLease lease;
    private final SqlLeaseTimings timings;
    private final int shards;
    private final List<List<String>> takeEpoch;
    private final boolean createTable;
    /** This member's holder token, the same for all its leases; fresh for each transport. */
    private final String token = UUID.randomUUID().toString();
    private final Map<Integer, Heartbeat> pending = new ConcurrentHashMap<>();

    private Listener listener;
    private boolean prepared;
    /** The shards whose leases this member holds; replaced, never changed in place. */
    private volatile Set<Integer> owned = Set.of();
    /** Held shards not yet announced: their acquisition came back too late to count; the next renewal does. */
    private final Set<Integer> unannounced = new TreeSet<>();
    private long confirmedFrom;
    private long nextRenew;
    private long nextBalance;
    private volatile boolean confirmRequested;
    private boolean warned;
    /** The shard this member last asked for (its request is renewed while it is still short), or -1. */
    private int asked = -1;

    private SqlShardedLeaderTransport(Builder builder) {
        this.timings = builder.timings();
        this.lease = new SqlLease(builder.store, builder.statements, timings.statementTimeout(), timings.leaseDuration());
        this.shards = builder.store.shards();
        List<List<String>> epochs = new ArrayList<>();
        for (int i = 0; i < shards; i++) {
            SqlStore view = (SqlStore) builder.store.shard(i);
            epochs.add(builder.store.fencing() ? view.sqlStatements().takeEpoch() : List.of());
        }
        this.takeEpoch = List.copyOf(epochs);
        this.createTable = builder.createTable;
    }

    /**
     * Starts a builder for shard leases hosted by {@code store}'s database.
     *
     * @param store the whole sharded outbox's store (its shard count is the transport's); not null
     * @return a new builder with the defaults
     * @throws NullPointerException     if {@code store} is null
     * @throws IllegalArgumentException if the store cannot host a lease
     */
    public static Builder builder(SqlStore store) {
        return new Builder(store);
    }

    @Override
    public int shards() {
        return shards;
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
     * The shards whose leases this member holds now; safe from any thread.
     *
     * @return an immutable snapshot of shard indexes
     */
    public Set<Integer> assignedShards() {
        return owned;
    }

    @Override
    public void start(Listener listener) {
        if (this.listener != null) {
            throw new IllegalStateException("the shard lease transport of " + lease.table() + " is already started");
        }
        this.listener = Objects.requireNonNull(listener, "listener");
        long now = System.nanoTime();
        nextBalance = now;
        nextRenew = now;
        prepare();
    }

    private boolean prepare() {
        if (!prepared) {
            List<Integer> rows = new ArrayList<>();
            for (int i = 0; i < shards; i++) {
                rows.add(i + 1);
            }
            try {
                lease.createRows(rows, createTable);
                prepared = true;
                log.info("joined the shard leader election on {} ({} shards, lease {} ms, renewed every {} ms)",
                        lease.table(), shards, timings.leaseDuration().toMillis(), timings.renewInterval().toMillis());
            } catch (StoreException e) {
                warn("could not prepare the lease table", e);
            }
        }
        return prepared;
    }

    /** Renews this member's leases when due, balances when due (take, ask, give up), waits out {@code timeout}. */
    @Override
    public void poll(Duration timeout) {
        if (listener == null) {
            throw new IllegalStateException("the shard lease transport of " + lease.table() + " is not started");
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        if (!prepared && System.nanoTime() - nextBalance >= 0) {
            nextBalance = System.nanoTime() + timings.acquireInterval().toNanos();
            if (prepare()) {
                nextBalance = System.nanoTime();
            }
        }
        if (prepared) {
            long now = System.nanoTime();
            if (!owned.isEmpty() && (now - nextRenew >= 0 || confirmRequested)) {
                nextRenew = now + timings.renewInterval().toNanos();
                renew(now);
            }
            now = System.nanoTime();
            if (now - nextBalance >= 0) {
                nextBalance = now + timings.acquireInterval().toNanos();
                balance();
            }
        }
        for (long left = deadline - System.nanoTime(); left > 0 && !Thread.currentThread().isInterrupted();
             left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(this, left);
        }
    }

    private void renew(long started) {
        Map<Integer, Heartbeat> proving = new HashMap<>();
        for (int shard : owned) {
            Heartbeat hb = pending.remove(shard);
            if (hb != null) {
                proving.put(shard, hb);
            }
        }
        boolean confirm = confirmRequested;
        confirmRequested = false;
        int renewed;
        try {
            renewed = lease.renewAll(token);
        } catch (StoreException e) {
            putBack(proving);
            confirmRequested |= confirm;
            warn("could not renew the shard leases", e);
            if (System.nanoTime() - confirmedFrom > timings.leaseDuration().toNanos()) {
                log.warn("the shard leases {} of {} expired while they could not be renewed: lost", owned,
                        lease.table());
                lose(owned);
            }
            return;
        }
        warned = false;
        if (renewed != owned.size()) {
            Set<Integer> still;
            try {
                still = mine(lease.rows(shards));
            } catch (StoreException e) {
                putBack(proving);
                confirmRequested |= confirm;
                warn("could not read the shard leases", e);
                return;
            }
            Set<Integer> gone = new TreeSet<>(owned);
            gone.removeAll(still);
            if (!gone.isEmpty()) {
                log.warn("the shard leases {} of {} were taken or expired before they were renewed: lost", gone,
                        lease.table());
                lose(gone);
            }
        }
        if (System.nanoTime() - started > timings.renewInterval().toNanos()) {
            putBack(proving);
            confirmRequested |= confirm;
            return; // too slow to prove anything
        }
        confirmedFrom = started;
        Set<Integer> now = owned;
        Set<Integer> fresh = new TreeSet<>(unannounced);
        fresh.retainAll(now);
        unannounced.clear();
        if (!fresh.isEmpty()) {
            listener.assigned(Set.copyOf(fresh));
        }
        if (confirm) {
            listener.confirmed(now);
        }
        for (Map.Entry<Integer, Heartbeat> e : proving.entrySet()) {
            if (now.contains(e.getKey()) && !fresh.contains(e.getKey())) {
                listener.heartbeat(e.getKey(), e.getValue());
            }
        }
    }

    private void putBack(Map<Integer, Heartbeat> proving) {
        proving.forEach(pending::putIfAbsent);
    }

    /**
     * Reads the leases and acts on {@link SqlShardBalance}'s decision: gives up what was asked of it beyond its share,
     * takes free leases up to its share, asks for one if short.
     */
    private void balance() {
        List<SqlLease.Row> rows;
        try {
            rows = lease.rows(shards);
        } catch (StoreException e) {
            warn("could not read the shard leases", e);
            return;
        }
        warned = false;
        SqlShardBalance decision = SqlShardBalance.decide(rows, token, shards);

        Set<Integer> gone = new TreeSet<>(owned);
        gone.removeAll(decision.mine());
        if (!gone.isEmpty()) {
            log.warn("the shard leases {} of {} were taken or expired: lost", gone, lease.table());
            lose(gone);
        }
        if (!decision.give().isEmpty()) {
            handOver(new TreeSet<>(decision.give())); // drain first, then release
        }

        Set<Integer> gained = new TreeSet<>();
        List<Integer> candidates = new ArrayList<>(decision.reserved());
        candidates.addAll(decision.free().subList(0, Math.min(decision.free().size(), decision.room())));
        for (int shard : candidates) {
            long started = System.nanoTime();
            try {
                if (!lease.acquire(shard + 1, token, takeEpoch.get(shard))) {
                    continue; // another member was quicker
                }
            } catch (StoreException e) {
                warn("could not try to take a shard lease", e);
                break;
            }
            gained.add(shard);
            if (System.nanoTime() - started > timings.renewInterval().toNanos()) {
                unannounced.add(shard);
            }
        }
        if (!gained.isEmpty()) {
            if (owned.isEmpty()) {
                confirmedFrom = System.nanoTime();
                nextRenew = confirmedFrom + timings.renewInterval().toNanos();
            }
            Set<Integer> now = new TreeSet<>(owned);
            now.addAll(gained);
            owned = Set.copyOf(now);
            log.info("took the shard leases {} of {}; holding {}", gained, lease.table(), now);
            Set<Integer> announce = new TreeSet<>(gained);
            announce.removeAll(unannounced);
            if (!announce.isEmpty()) {
                listener.assigned(Set.copyOf(announce));
            }
        }
        decision.ask().ifPresent(a -> ask(a.holder(), a.shard()));
    }

    private void ask(String holder, int shard) {
        try {
            if (lease.want(shard + 1, token, holder)) {
                if (asked != shard) {
                    log.info("asked for the shard lease {} of {}, held by a busier member", shard, lease.table());
                } else {
                    log.debug("renewed the request for the shard lease {} of {}", shard, lease.table());
                }
                asked = shard;
            }
        } catch (StoreException e) {
            warn("could not ask for a shard lease", e);
        }
    }

    /**
     * Revokes {@code give} (the listener returns once drained), then releases their leases, which stay reserved for
     * the members that asked for them for as long as a lease lasts.
     */
    private void handOver(Set<Integer> give) {
        Set<Integer> now = new TreeSet<>(owned);
        now.removeAll(give);
        owned = Set.copyOf(now);
        give.forEach(pending::remove);
        Set<Integer> announced = new TreeSet<>(give);
        announced.removeAll(unannounced);
        unannounced.removeAll(give);
        if (!announced.isEmpty()) {
            listener.revoked(Set.copyOf(announced));
        }
        for (int shard : give) {
            try {
                lease.release(shard + 1, token);
            } catch (StoreException e) {
                log.warn("could not release the shard lease {} of {}; it is taken once it expires: {}", shard,
                        lease.table(), e.getMessage());
            }
        }
        log.info("handed over the shard leases {} of {} (asked for by other members); holding {}", give,
                lease.table(), now);
    }

    private Set<Integer> mine(List<SqlLease.Row> rows) {
        Set<Integer> mine = new TreeSet<>();
        for (SqlLease.Row row : rows) {
            if (token.equals(row.holder())) {
                mine.add(row.id() - 1);
            }
        }
        return mine;
    }

    private void lose(Set<Integer> gone) {
        Set<Integer> lost = Set.copyOf(gone);
        Set<Integer> now = new TreeSet<>(owned);
        now.removeAll(lost);
        owned = Set.copyOf(now);
        lost.forEach(pending::remove);
        Set<Integer> announced = new TreeSet<>(lost);
        announced.removeAll(unannounced);
        unannounced.removeAll(lost);
        nextBalance = System.nanoTime() + timings.acquireInterval().toNanos();
        if (!announced.isEmpty()) {
            listener.lost(Set.copyOf(announced));
        }
    }

    private void warn(String what, StoreException e) {
        if (!warned) {
            log.warn("{} of {} (will keep trying): {}", what, lease.table(), e.getMessage());
            warned = true;
        } else {
            log.debug("{} of {}", what, lease.table(), e);
        }
    }

    /** Keeps the shard's newest heartbeat for the next renewal to confirm; dropped for a shard not held. Thread-safe. */
    @Override
    public void publish(int shard, Heartbeat heartbeat) {
        OutboxShards.checkIndex(shard, shards);
        Objects.requireNonNull(heartbeat, "heartbeat");
        if (owned.contains(shard)) {
            pending.put(shard, heartbeat);
        }
    }

    /** Answered by the next renewal with the shards still held. Thread-safe. */
    @Override
    public boolean reconfirm() {
        confirmRequested = true;
        return true;
    }

    /**
     * Withdraws this member's request for a lease, if it made one (so that the others stop counting it as a member at
     * their next try, not once the request lapsed), and releases every lease held (other members take them at their
     * next try). Idempotent.
     */
    @Override
    public void close() {
        Set<Integer> held = owned;
        owned = Set.of();
        pending.clear();
        if (asked >= 0) {
            asked = -1;
            try {
                if (lease.withdraw(token) > 0) {
                    log.info("withdrew the request for a shard lease of {}", lease.table());
                }
            } catch (StoreException e) {
                log.warn("could not withdraw the request for a shard lease of {}; it lapses a lease after it was"
                        + " made: {}", lease.table(), e.getMessage());
            }
        }
        for (int shard : held) {
            try {
                lease.release(shard + 1, token);
            } catch (StoreException e) {
                log.warn("could not release the shard lease {} of {}; it is taken once it expires: {}", shard,
                        lease.table(), e.getMessage());
            }
        }
        if (!held.isEmpty()) {
            log.info("released the shard leases {} of {}", held, lease.table());
        }
    }

    @Override
    public String toString() {
        return "SqlShardedLeaderTransport{" + lease.table() + ", shards=" + shards + ", assigned=" + owned + '}';
    }

    /** Builds a {@link SqlShardedLeaderTransport}; checks the timings on {@link #build()}. Not thread-safe. */
    public static final class Builder extends SqlLeaseBuilder<Builder> {
        private Builder(SqlStore store) {
            super(store);
        }

        /**
         * Checks the timings; opens no connection (that is {@link SqlShardedLeaderTransport#start}'s work).
         *
         * @return a new transport, not started
         * @throws IllegalArgumentException if the timings break a relation of {@link SqlLeaseTimings} (the message
         *                                  names the setting, its value and the bound)
         */
        public SqlShardedLeaderTransport build() {
            return new SqlShardedLeaderTransport(this);
        }
    }
}
