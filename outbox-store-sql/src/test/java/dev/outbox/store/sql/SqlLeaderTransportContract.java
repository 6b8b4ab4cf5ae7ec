package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.DispatcherConfig;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.StorageFencing;
import dev.outbox.testkit.LeaderTransportContract;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.testkit.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The leader transport contract for leader election in the database ({@link SqlLeaderTransport}): each test's
 * election is the lease of an outbox table of its own, whose store (storage fencing on) every member shares. Timings
 * are small so that the suite stays quick: heartbeat timeout 2 s, poll interval 50 ms, renew interval 500 ms (a
 * renewal confirms the leader's heartbeats only if it came back within it: shorter ones fenced leaders needlessly on a
 * busy two-core machine), delivery timeout 1 s, lease 4 s (the least the relations allow is 3.5 s), standbys try every
 * 200 ms. A subclass starts
 * the database and sets {@link #storePool} in a {@code @BeforeAll} method.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SqlLeaderTransportContract extends LeaderTransportContract {
    static final Duration HEARTBEAT_TIMEOUT = Duration.ofSeconds(2);
    static final Duration POLL = Duration.ofMillis(50);
    static final Duration RENEW = Duration.ofMillis(500);
    static final Duration DELIVERY = Duration.ofSeconds(1);
    static final Duration LEASE = Duration.ofMillis(4000);
    static final Duration ACQUIRE = Duration.ofMillis(200);
    static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(POLL)
            .heartbeatTimeout(HEARTBEAT_TIMEOUT).build();

    private final AtomicInteger tables = new AtomicInteger();
    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    /** The pool the stores and the transports take their connections from. */
    protected HikariDataSource storePool;

    /** @param builders a builder of the store under test on a data source */
    protected SqlLeaderTransportContract(Function<DataSource, SqlStore.Builder<?, ?>> builders) {
        this.builders = builders;
    }

    /**
     * Taking the lease increments the epoch storage fencing checks, in the same transaction: a write fenced by the
     * epoch before is refused from then on. The database shows who holds the lease, and closing releases it.
     */
    @Test
    void takingTheLeaseIncrementsTheFencingEpochAndClosingReleasesIt() {
        SqlStore store = builders.apply(storePool).table("elected_" + tables.incrementAndGet()).build();
        store.createSchema();
        long before = store.acquireEpoch();
        store.fencedBy(before).purge(List.of(Long.MAX_VALUE)); // accepted: nobody took the lease yet
        SqlLeaderTransport transport = SqlLeaderTransport.builder(store).dispatcherConfig(CONFIG)
                .deliveryTimeout(DELIVERY).leaseDuration(LEASE).renewInterval(RENEW).acquireInterval(ACQUIRE).build();
        List<String> events = new CopyOnWriteArrayList<>();
        transport.start(new LeaderTransport.Listener() {
            @Override
            public void assigned() {
                events.add("assigned");
            }

            @Override
            public void revoked() {
                events.add("revoked");
            }

            @Override
            public void lost() {
                events.add("lost");
            }

            @Override
            public void heartbeat(Heartbeat heartbeat) {
                events.add("heartbeat " + heartbeat.sequence());
            }
        });
        try {
            Await.untilOrFail(() -> {
                transport.poll(POLL);
                return events.contains("assigned");
            }, Duration.ofSeconds(10), () -> "the only member takes the lease: " + events);
            assertThat(transport.holder()).isPresent();
            assertThatThrownBy(() -> store.fencedBy(before).purge(List.of(Long.MAX_VALUE)))
                    .isInstanceOf(StoreFencedException.class);
            assertThat(store.acquireEpoch()).isEqualTo(before + 2); // the lease's increment, then this one

            // A heartbeat comes back only through a renewal that began after it was published.
            transport.publish(new Heartbeat(java.util.UUID.randomUUID(), 7));
            assertThat(events).doesNotContain("heartbeat 7");
            Await.untilOrFail(() -> {
                transport.poll(POLL);
                return events.contains("heartbeat 7");
            }, RENEW.multipliedBy(4), () -> "a renewal confirms the heartbeat: " + events);
        } finally {
            transport.close();
        }
        assertThat(transport.holder()).isEmpty();
        assertThat(transport.isAssigned()).isFalse();
        assertThat(events).doesNotContain("lost", "revoked");
    }

    /** How long a request holds in the request tests below: their lease statements' lease. */
    private static final Duration WINDOW = Duration.ofMillis(2000);

    /** The lease statements of a fresh outbox table's lease table, with the lease (and request window) WINDOW. */
    private SqlLease lease(SqlStore store) {
        SqlLeaseStatements sql = store.leaseStatements().orElseThrow();
        return new SqlLease(store, sql, Duration.ofSeconds(5), WINDOW);
    }

    private static String wantedBy(SqlLease lease, int row) {
        return lease.rows(row).get(row - 1).wantedBy();
    }

    /**
     * The shard leases' requests ({@code want}, read by {@code rows}) lapse a lease after they were last made, also on
     * a row whose holder keeps renewing it, so that a member that asked and then left stops counting as a member (the
     * stall the test kit's simulation found at sharded seed 131); until then another member's request is refused, and
     * the requester renews its own by asking again. Once lapsed, another member may ask. A released row stays reserved
     * for the member whose request holds.
     */
    @Test
    void aRequestForALeaseLapsesUnlessItsRequesterRenewsIt() {
        SqlStore store = builders.apply(storePool).table("wanted_" + tables.incrementAndGet()).build();
        store.createSchema();
        SqlLease lease = lease(store);
        lease.createRows(List.of(1, 2), true);
        assertThat(lease.acquire(1, "a", List.of())).isTrue();
        assertThat(lease.want(1, "b", "a")).isTrue();
        assertThat(wantedBy(lease, 1)).isEqualTo("b");
        assertThat(lease.want(1, "c", "a")).as("b's request holds").isFalse();
        assertThat(lease.want(2, "b", "a")).as("a does not hold row 2").isFalse();

        long renewing = System.nanoTime();
        assertThat(lease.want(1, "b", "a")).as("b renews its request").isTrue();
        assertThat(lease.want(1, "c", "a")).as("b's renewed request holds").isFalse();
        long lapsed = Await.untilOrFail(() -> lease.renewAll("a") == 1 && wantedBy(lease, 1) == null,
                Duration.ofSeconds(15), () -> "b's request on a's live row lapsed");
        long since = lapsed - renewing;
        assertThat(since).as("not before a window after b last asked (%d ms)", since / 1_000_000)
                .isGreaterThanOrEqualTo(WINDOW.toNanos());
        assertThat(lease.holder(1)).as("a held the row throughout").contains("a");

        assertThat(lease.want(1, "c", "a")).as("b's request lapsed: c may ask").isTrue();
        assertThat(wantedBy(lease, 1)).isEqualTo("c");
        assertThat(lease.release(1, "a")).isTrue();
        List<SqlLease.Row> released = lease.rows(1);
        assertThat(released.get(0).holder()).isNull();
        assertThat(released.get(0).wantedBy()).as("reserved for c while its request holds").isEqualTo("c");
        assertThat(lease.acquire(1, "c", List.of())).isTrue();
        assertThat(lease.rows(1).get(0)).isEqualTo(new SqlLease.Row(1, "c", null));
    }

    /**
     * A lease table created by the first snapshot's DDL (no {@code wanted_at}) by {@code CREATE TABLE IF NOT EXISTS}
     * gets the column at the next start, idempotently: requests work on it.
     */
    @Test
    void aLeaseTableOfThePreviousLayoutGetsTheRequestTimeColumn() throws Exception {
        SqlStore store = builders.apply(storePool).table("wanted_" + tables.incrementAndGet()).build();
        store.createSchema();
        SqlLeaseStatements sql = store.leaseStatements().orElseThrow();
        String previous = sql.createTable().get(0).replaceFirst(" wanted_at [^,]+,", "");
        assertThat(previous).contains("wanted_by").doesNotContain("wanted_at");
        try (java.sql.Connection c = storePool.getConnection(); java.sql.Statement s = c.createStatement()) {
            s.execute(previous);
            if (!c.getAutoCommit()) {
                c.commit();
            }
        }
        SqlLease lease = lease(store);
        lease.createRows(List.of(1), true);
        lease.createRows(List.of(1), true); // again: the upgrade is idempotent
        assertThat(lease.acquire(1, "a", List.of())).isTrue();
        assertThat(lease.want(1, "b", "a")).isTrue();
        assertThat(wantedBy(lease, 1)).isEqualTo("b");
        assertThat(lease.want(1, "c", "a")).as("b's request holds").isFalse();
    }

    @AfterAll
    final void closePool() {
        storePool.close();
    }

    @Override
    protected final Election newElection() {
        SqlStore store = builders.apply(storePool).table("elected_" + tables.incrementAndGet()).build();
        store.createSchema();
        return new Election() {
            @Override
            public LeaderTransport member(String name) {
                return SqlLeaderTransport.builder(store).dispatcherConfig(CONFIG).deliveryTimeout(DELIVERY)
                        .leaseDuration(LEASE).renewInterval(RENEW).acquireInterval(ACQUIRE).build();
            }

            @Override
            public StorageFencing fencing() {
                return store;
            }
        };
    }

    /**
     * A crashed leader's last renewal began at most a renew interval and a poll before the crash, so its lease
     * expires at the earliest the lease less those after the crash; a standby takes it within its acquire interval
     * and a poll after it expired (plus a second of slack for a busy machine). A clean hand-over takes a standby's
     * next try (plus the same slack).
     */
    @Override
    protected final Timings timings() {
        return new Timings(HEARTBEAT_TIMEOUT, POLL, DELIVERY, LEASE.minus(RENEW).minus(POLL),
                LEASE.plus(ACQUIRE).plus(POLL).plusSeconds(1), ACQUIRE.plus(POLL).plusSeconds(1));
    }
}
