package dev.outbox.testkit.sim;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.spi.StoreException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

import static dev.outbox.testkit.sim.SimShardBalance.sorted;

/**
 * Shard leadership in the database for a simulation: {@code outbox-store-sql}'s {@code SqlShardedLeaderTransport},
 * step for step, over a {@link SimLeaseTable} with a row per shard and on the simulation's clock (kept in step by hand;
 * see {@link SimLeaseTransport}). One renewal of all its leases every renew interval confirms the heartbeats
 * published before it began, if it came back within the renew interval; every acquire interval it reads the leases
 * and acts on {@link SimShardBalance}'s decision: gives up what others asked of it beyond its share (revoked, then
 * released once drained), takes free leases up to its share, asks the busiest member for one if short. A lease found
 * taken or expired is lost. Closing withdraws the member's request for a lease, if it made one, and releases its
 * leases. Every set it hands the listener iterates in order, so that a run replays. Only the
 * simulation's workers call it.
 */
final class SimShardedLeaseTransport implements ShardedLeaderTransport {
    private final SimScheduler sched;
    private final SimLeaseTable table;
    private final SimLeaseTimings timings;
    private final int shards;
    private final String name;
    /** The member's token, the same for all its leases, as the SQL transport's. */
    private final String token;
    private final Consumer<String> trace;
    private final Map<Integer, Heartbeat> pending = new TreeMap<>();

    private Listener listener;
    private boolean prepared;
    private Set<Integer> owned = Set.of();
    private final Set<Integer> unannounced = new TreeSet<>();
    private long confirmedFrom;
    private long nextRenew;
    private long nextBalance;
    private boolean confirmRequested;
    /** Whether this member asked for a lease: it withdraws its requests when it closes. */
    private boolean asked;

    SimShardedLeaseTransport(SimScheduler sched, SimLeaseTable table, SimLeaseTimings timings, int shards, String name,
                             Consumer<String> trace) {
        this.sched = sched;
        this.table = table;
        this.timings = timings;
        this.shards = shards;
        this.name = name;
        this.token = name;
        this.trace = trace;
    }

    /** The shards whose leases this member believes it holds. */
    Set<Integer> owned() {
        return owned;
    }

    @Override
    public int shards() {
        return shards;
    }

    @Override
    public void start(Listener listener) {
        if (this.listener != null) {
            throw new IllegalStateException(name + "'s shard lease transport is already started");
        }
        this.listener = Objects.requireNonNull(listener, "listener");
        long now = sched.nanoTime();
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
                table.createRows(name, rows);
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
            throw new IllegalStateException(name + "'s shard lease transport is not started");
        }
        long deadline = sched.nanoTime() + timeout.toNanos();
        if (!prepared && sched.nanoTime() - nextBalance >= 0) {
            nextBalance = sched.nanoTime() + timings.acquire();
            if (prepare()) {
                nextBalance = sched.nanoTime();
            }
        }
        if (prepared) {
            long now = sched.nanoTime();
            if (!owned.isEmpty() && (now - nextRenew >= 0 || confirmRequested)) {
                nextRenew = now + timings.renew();
                renew(now);
            }
            now = sched.nanoTime();
            if (now - nextBalance >= 0) {
                nextBalance = now + timings.acquire();
                balance();
            }
        }
        if (!Thread.currentThread().isInterrupted()) {
            sched.sleepUntil(deadline);
        }
    }

    private void renew(long started) {
        Map<Integer, Heartbeat> proving = new TreeMap<>();
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
            renewed = table.renewAll(name, token);
        } catch (StoreException e) {
            putBack(proving);
            confirmRequested |= confirm;
            if (sched.nanoTime() - confirmedFrom > timings.lease()) {
                trace.accept(name + ": its shard leases " + owned + " expired while they could not be renewed: lost");
                lose(owned);
            }
            return;
        }
        if (renewed != owned.size()) {
            Set<Integer> still;
            try {
                still = mine(table.rows(name, shards));
            } catch (StoreException e) {
                putBack(proving);
                confirmRequested |= confirm;
                return;
            }
            Set<Integer> gone = new TreeSet<>(owned);
            gone.removeAll(still);
            if (!gone.isEmpty()) {
                trace.accept(name + ": its shard leases " + gone + " were taken or expired before they were renewed:"
                        + " lost");
                lose(gone);
            }
        }
        if (sched.nanoTime() - started > timings.renew()) {
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
            listener.assigned(sorted(fresh));
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

    private void balance() {
        List<SimLeaseTable.LeaseRow> rows;
        try {
            rows = table.rows(name, shards);
        } catch (StoreException e) {
            return;
        }
        SimShardBalance decision = SimShardBalance.decide(rows, token, shards);

        Set<Integer> gone = new TreeSet<>(owned);
        gone.removeAll(decision.mine());
        if (!gone.isEmpty()) {
            trace.accept(name + ": its shard leases " + gone + " were taken or expired: lost");
            lose(gone);
        }
        if (!decision.give().isEmpty()) {
            handOver(new TreeSet<>(decision.give()));
        }

        Set<Integer> gained = new TreeSet<>();
        List<Integer> candidates = new ArrayList<>(decision.reserved());
        candidates.addAll(decision.free().subList(0, Math.min(decision.free().size(), decision.room())));
        for (int shard : candidates) {
            long started = sched.nanoTime();
            try {
                if (!table.acquire(name, shard + 1, token)) {
                    continue;
                }
            } catch (StoreException e) {
                break;
            }
            gained.add(shard);
            if (sched.nanoTime() - started > timings.renew()) {
                unannounced.add(shard);
            }
        }
        if (!gained.isEmpty()) {
            if (owned.isEmpty()) {
                confirmedFrom = sched.nanoTime();
                nextRenew = confirmedFrom + timings.renew();
            }
            Set<Integer> now = new TreeSet<>(owned);
            now.addAll(gained);
            owned = sorted(now);
            Set<Integer> announce = new TreeSet<>(gained);
            announce.removeAll(unannounced);
            if (!announce.isEmpty()) {
                listener.assigned(sorted(announce));
            }
        }
        decision.ask().ifPresent(a -> ask(a.holder(), a.shard()));
    }

    private void ask(String holder, int shard) {
        try {
            asked |= table.want(name, shard + 1, token, holder);
        } catch (StoreException e) {
            // tried again at the next balance
        }
    }

    private void handOver(Set<Integer> give) {
        Set<Integer> now = new TreeSet<>(owned);
        now.removeAll(give);
        owned = sorted(now);
        give.forEach(pending::remove);
        Set<Integer> announced = new TreeSet<>(give);
        announced.removeAll(unannounced);
        unannounced.removeAll(give);
        if (!announced.isEmpty()) {
            listener.revoked(sorted(announced));
        }
        for (int shard : give) {
            try {
                table.release(name, shard + 1, token);
            } catch (StoreException e) {
                trace.accept(name + ": could not release the shard lease " + shard + "; it is taken once it expires");
            }
        }
    }

    private Set<Integer> mine(List<SimLeaseTable.LeaseRow> rows) {
        Set<Integer> mine = new TreeSet<>();
        for (SimLeaseTable.LeaseRow row : rows) {
            if (token.equals(row.holder())) {
                mine.add(row.id() - 1);
            }
        }
        return mine;
    }

    private void lose(Set<Integer> gone) {
        Set<Integer> lost = sorted(gone);
        Set<Integer> now = new TreeSet<>(owned);
        now.removeAll(lost);
        owned = sorted(now);
        lost.forEach(pending::remove);
        Set<Integer> announced = new TreeSet<>(lost);
        announced.removeAll(unannounced);
        unannounced.removeAll(lost);
        nextBalance = sched.nanoTime() + timings.acquire();
        if (!announced.isEmpty()) {
            listener.lost(sorted(announced));
        }
    }

    @Override
    public void publish(int shard, Heartbeat heartbeat) {
        Objects.requireNonNull(heartbeat, "heartbeat");
        if (owned.contains(shard)) {
            pending.put(shard, heartbeat);
        }
    }

    @Override
    public boolean reconfirm() {
        confirmRequested = true;
        return true;
    }

    @Override
    public void close() {
        Set<Integer> held = owned;
        owned = Set.of();
        pending.clear();
        if (asked) {
            asked = false;
            try {
                table.withdraw(name, token);
            } catch (StoreException e) {
                trace.accept(name + ": could not withdraw its request for a shard lease; it lapses a lease after it"
                        + " was made");
            }
        }
        for (int shard : held) {
            try {
                table.release(name, shard + 1, token);
            } catch (StoreException e) {
                trace.accept(name + ": could not release the shard lease " + shard + "; it is taken once it expires");
            }
        }
    }

    @Override
    public String toString() {
        long now = sched.nanoTime();
        return name + " owns " + owned + (unannounced.isEmpty() ? "" : " unannounced " + unannounced)
                + " pending " + pending.keySet() + " confirmed " + (confirmedFrom - now) + " renew "
                + (nextRenew - now) + " balance " + (nextBalance - now) + (confirmRequested ? " confirm" : "")
                + (asked ? " asked" : "");
    }
}
