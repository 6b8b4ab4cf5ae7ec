package dev.outbox.testkit.sim;

import dev.outbox.spi.StoreException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.function.Predicate;

/**
 * The database's lease table for a simulation of leader election in the database, row for row what
 * {@code outbox-store-sql}'s {@code SqlLeaseStatements} specify: a row per lease (1 for an unsharded outbox,
 * {@code shard + 1} for a shard) with its holder, its expiry and who asked for it, every expiry compared with the
 * database's clock — the simulation's virtual time — in the statement, never with an instance's. Each statement is
 * a round trip: the scheduler may run other workers before it reaches the table and after it answers (a process may
 * be paused in between), and it fails with a retriable {@link StoreException} if its caller is cut off from the
 * database. Taking a lease runs the storage-fencing epoch increment of the same row in the same step, as the SQL
 * lease does in the same transaction. Only the simulation's workers call it.
 */
final class SimLeaseTable {
    private final SimScheduler sched;
    private final long leaseNanos;
    private final Predicate<String> cutOff;
    private final IntConsumer takeEpoch;
    private final Consumer<String> trace;
    private final boolean renewalAfterLapse;
    private final IntConsumer changed;
    private final Map<Integer, Row> rows = new TreeMap<>();

    /** One row: its holder (a token), when it expires on the database's clock, who asked for it and when last. */
    private static final class Row {
        String holder;
        long expires;
        String wantedBy;
        long wantedAt;
    }

    /**
     * One lease row as {@link #rows} reads it, as the SQL lease's {@code rows} statement does.
     *
     * @param id       the row: 1 for the outbox, {@code shard + 1} for a shard
     * @param holder   its holder's token if its lease has not expired, else null
     * @param wantedBy the token that asked for it, while the request holds, else null
     */
    record LeaseRow(int id, String holder, String wantedBy) {
    }

    /**
     * @param leaseNanos        how long a taken or renewed lease holds, in virtual nanoseconds
     * @param cutOff            whether a member (by name) cannot reach the database: its statements fail
     * @param takeEpoch         the epoch increment of a row, run in the same step as its take-over; null for none
     * @param trace             told what the table does, for the run's trace
     * @param changed           told of every row that changed hands (taken or released), by id
     * @param renewalAfterLapse the planted bug: a renewal writes the row as the renewer's whether or not its lease
     *                          lapsed and was taken meanwhile
     */
    SimLeaseTable(SimScheduler sched, long leaseNanos, Predicate<String> cutOff, IntConsumer takeEpoch,
                  Consumer<String> trace, IntConsumer changed, boolean renewalAfterLapse) {
        this.sched = sched;
        this.leaseNanos = leaseNanos;
        this.cutOff = cutOff;
        this.takeEpoch = takeEpoch;
        this.trace = trace;
        this.renewalAfterLapse = renewalAfterLapse;
        this.changed = changed;
    }

    /** Adds the rows that are missing, free (no holder, expired now). */
    void createRows(String member, List<Integer> ids) {
        reach(member, "adding the lease rows " + ids);
        for (int id : ids) {
            rows.computeIfAbsent(id, i -> {
                Row r = new Row();
                r.expires = sched.now();
                return r;
            });
        }
        answer();
    }

    /**
     * Takes row {@code id} for {@code holder} if it is free or expired, and increments its epoch in the same step.
     *
     * @return whether it was taken
     */
    boolean acquire(String member, int id, String holder) {
        reach(member, "taking the lease " + id);
        Row r = row(id);
        boolean taken = r.holder == null || r.expires <= sched.now();
        if (taken) {
            r.holder = holder;
            r.expires = sched.now() + leaseNanos;
            r.wantedBy = null;
            r.wantedAt = 0;
            if (takeEpoch != null) {
                takeEpoch.accept(id);
            }
            changed.accept(id);
            trace.accept("lease table: " + member + " takes the lease " + id + " (" + holder + ")"
                    + (takeEpoch == null ? "" : " and its next epoch"));
        }
        answer();
        return taken;
    }

    /** Extends {@code holder}'s unexpired lease of {@code id}; false if it no longer holds it. */
    boolean renew(String member, int id, String holder) {
        reach(member, "renewing the lease " + id);
        Row r = row(id);
        boolean renewed = holds(r, holder);
        if (!renewed && renewalAfterLapse) {
            trace.accept("lease table: " + member + " renews the lease " + id + " after it lapsed"
                    + (r.holder == null || r.holder.equals(holder) ? "" : " (held by " + r.holder + ")")
                    + " (planted bug)");
            r.holder = holder;
            renewed = true;
        }
        if (renewed) {
            r.expires = sched.now() + leaseNanos;
        }
        answer();
        return renewed;
    }

    /** Extends every unexpired lease {@code holder} holds; returns how many. */
    int renewAll(String member, String holder) {
        reach(member, "renewing its leases");
        int n = 0;
        for (Row r : rows.values()) {
            if (holds(r, holder)) {
                r.expires = sched.now() + leaseNanos;
                n++;
            }
        }
        answer();
        return n;
    }

    /** Frees {@code id} if {@code holder} holds it (expired or not), keeping its request; false if it did not. */
    boolean release(String member, int id, String holder) {
        reach(member, "releasing the lease " + id);
        Row r = row(id);
        boolean released = holder.equals(r.holder);
        if (released) {
            r.holder = null;
            r.expires = sched.now();
            changed.accept(id);
            trace.accept("lease table: " + member + " releases the lease " + id);
        }
        answer();
        return released;
    }

    /**
     * Asks {@code holder} for {@code id} on behalf of {@code wanter}, or renews {@code wanter}'s request for it (a
     * request lapses a lease after it was last made); false if another's request still holds or the row moved.
     */
    boolean want(String member, int id, String wanter, String holder) {
        reach(member, "asking for the lease " + id);
        Row r = row(id);
        boolean renewing = wanter.equals(r.wantedBy) && requestHolds(r);
        boolean asked = holds(r, holder) && (r.wantedBy == null || wanter.equals(r.wantedBy) || !requestHolds(r));
        if (asked) {
            r.wantedBy = wanter;
            r.wantedAt = sched.now();
            trace.accept("lease table: " + member + (renewing ? " renews its request for the lease "
                    : " asks for the lease ") + id);
        }
        answer();
        return asked;
    }

    /** Withdraws every request {@code wanter} made, on a live row or one released for it; returns how many. */
    int withdraw(String member, String wanter) {
        reach(member, "withdrawing its requests");
        int n = 0;
        for (Map.Entry<Integer, Row> e : rows.entrySet()) {
            Row r = e.getValue();
            if (wanter.equals(r.wantedBy)) {
                r.wantedBy = null;
                r.wantedAt = 0;
                n++;
                trace.accept("lease table: " + member + " withdraws its request for the lease " + e.getKey());
            }
        }
        answer();
        return n;
    }

    /** Whether {@code r}'s request was made within a lease: as the SQL rows statement's {@code wanted_at} check. */
    private boolean requestHolds(Row r) {
        return r.wantedBy != null && sched.now() - r.wantedAt < leaseNanos;
    }

    /** Rows 1 to {@code last}, in id order; a request shows for as long as a lease lasts after it was last made. */
    List<LeaseRow> rows(String member, int last) {
        reach(member, "reading the leases");
        List<LeaseRow> list = new ArrayList<>();
        for (Map.Entry<Integer, Row> e : rows.entrySet()) {
            if (e.getKey() > last) {
                break;
            }
            Row r = e.getValue();
            boolean live = r.holder != null && r.expires > sched.now();
            list.add(new LeaseRow(e.getKey(), live ? r.holder : null, requestHolds(r) ? r.wantedBy : null));
        }
        answer();
        return list;
    }

    /** The unexpired holder of {@code id}, as the database sees it now (no round trip: for the simulation). */
    Optional<String> holder(int id) {
        Row r = rows.get(id);
        return r == null || r.holder == null || r.expires <= sched.now() ? Optional.empty()
                : Optional.of(r.holder);
    }

    private boolean holds(Row r, String holder) {
        return holder.equals(r.holder) && r.expires > sched.now();
    }

    private Row row(int id) {
        Row r = rows.get(id);
        if (r == null) {
            throw new IllegalStateException("no lease row " + id);
        }
        return r;
    }

    /** The statement's way there: others may run first; it fails if {@code member} cannot reach the database. */
    private void reach(String member, String what) {
        sched.yieldPoint();
        if (cutOff.test(member)) {
            throw new StoreException(what + ": " + member + " cannot reach the database (simulated)", null, true);
        }
    }

    /** The answer's way back: others may run (and the caller's process may be paused) before it arrives. */
    private void answer() {
        sched.yieldPoint();
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("leases");
        for (Map.Entry<Integer, Row> e : rows.entrySet()) {
            Row r = e.getValue();
            sb.append(' ').append(e.getKey()).append('=').append(r.holder).append('@')
                    .append(r.expires - sched.now());
            if (r.wantedBy != null) {
                sb.append(" wanted by ").append(r.wantedBy).append('@').append(r.wantedAt - sched.now());
            }
        }
        return sb.toString();
    }
}
