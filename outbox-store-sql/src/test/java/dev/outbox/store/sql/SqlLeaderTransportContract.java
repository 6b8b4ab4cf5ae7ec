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
