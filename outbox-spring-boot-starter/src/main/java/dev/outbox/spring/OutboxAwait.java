package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.spi.Store;
import dev.outbox.store.sql.SqlStore;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.ApplicationContext;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * For an application's tests: waits until every outbox record committed before the call has been published (sent
 * and acknowledged by Kafka, so removed from the outbox table), without polling Kafka.
 *
 * <pre>{@code
 * orders.place(order);                                          // commits an order and its event
 * OutboxAwait.of(applicationContext).untilPublished(Duration.ofSeconds(10));
 * // the event is in Kafka now: assert on your consumer's side
 * }</pre>
 *
 * The call reads the outbox's highest committed id, then polls until no row at or below it is left. It fails with
 * an {@link AssertionError} when the timeout passes (naming how many records are left, the oldest one, and the
 * dispatcher's status and last failure), or at once when one of those records is parked (naming its reason). For
 * the table harvest of the SQL stores (Postgres, MySQL, MariaDB; sharded or not), not the WAL harvest. Records of
 * a transaction still open at the call (a test's own {@code @Transactional}, say) are not "committed before".
 * Thread-safe.
 */
public final class OutboxAwait {
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final DataSource dataSource;
    private final SqlStore store;
    private final Dispatcher dispatcher;

    private OutboxAwait(DataSource dataSource, SqlStore store, Dispatcher dispatcher) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.store = store;
        this.dispatcher = dispatcher;
    }

    /**
     * For the outbox of an application context with the starter: its {@code DataSource}, store and dispatcher.
     *
     * @param context the application's context (in a test, the injected {@code ApplicationContext}); it must hold
     *                one {@code DataSource} and the starter's {@link Store}, and may run no dispatcher
     *                ({@code outbox.dispatcher.enabled=false})
     * @return a waiter over that outbox
     * @throws org.springframework.beans.BeansException if the context has no single {@code DataSource} or
     *                                                  {@code Store} bean
     * @throws IllegalArgumentException                 if the store is not one of the SQL stores, or harvests the
     *                                                  WAL
     */
    public static OutboxAwait of(ApplicationContext context) {
        ObjectProvider<OutboxDispatcherLifecycle> lifecycle = context.getBeanProvider(OutboxDispatcherLifecycle.class);
        OutboxDispatcherLifecycle l = lifecycle.getIfAvailable();
        return of(context.getBean(DataSource.class), context.getBean(Store.class), l == null ? null : l.dispatcher());
    }

    /**
     * For the outbox of {@code store} in {@code dataSource}.
     *
     * @param dataSource the database of the outbox table, read with plain queries; not {@code null}
     * @param store      the outbox's store: a {@code PostgresStore} or {@code MySqlStore} with the table harvest
     * @param dispatcher the dispatcher in this JVM, or null: named in a failure's message
     * @return a waiter over that outbox
     * @throws NullPointerException     if {@code dataSource} is {@code null}
     * @throws IllegalArgumentException if the store is not one of the SQL stores, or harvests the WAL
     */
    public static OutboxAwait of(DataSource dataSource, Store store, Dispatcher dispatcher) {
        if (!(store instanceof SqlStore sql)) {
            throw new IllegalArgumentException("OutboxAwait needs one of the SQL stores (Postgres, MySQL), not "
                    + store);
        }
        if (!store.supportsMark()) {
            throw new IllegalArgumentException("OutboxAwait needs the table harvest, and " + store + " harvests the"
                    + " WAL (outbox.store.wal.url)");
        }
        return new OutboxAwait(dataSource, sql, dispatcher);
    }

    /**
     * Waits until every record committed before this call has been published.
     *
     * @param timeout how long to wait at most; the outbox is polled every 10 ms meanwhile
     * @throws AssertionError        if one of them is still in the outbox after {@code timeout}, or was parked
     * @throws IllegalStateException if the outbox cannot be read, or the calling thread is interrupted
     */
    public void untilPublished(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long horizon = queryLong("SELECT COALESCE(MAX(id), 0) FROM " + store.table());
        Set<Long> parkedBefore = parkedIds(horizon);
        while (true) {
            long left = queryLong("SELECT COUNT(*) FROM " + store.table() + " WHERE id <= " + horizon);
            if (left == 0) {
                return;
            }
            String parked = newlyParked(horizon, parkedBefore);
            if (parked != null) {
                throw new AssertionError("an outbox record committed before the call was parked, not published: "
                        + parked);
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new AssertionError("not published within " + timeout + ": " + left + " outbox record(s) of "
                        + store.table() + " committed before the call (ids up to " + horizon + ") are left, the"
                        + " oldest " + oldest(horizon) + "; " + dispatcherState());
            }
            if (Thread.currentThread().isInterrupted()) {
                throw new IllegalStateException("interrupted while waiting for the outbox to be published");
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
    }

    private String dispatcherState() {
        if (dispatcher == null) {
            return "no dispatcher runs in this application context (outbox.dispatcher.enabled=false?): another"
                    + " instance must publish";
        }
        DispatcherHealth h = dispatcher.health();
        return "the dispatcher is " + dispatcher.state() + ", " + h.status()
                + h.lastFailure().map(f -> ", last failure: " + f.operation() + ": " + f.error()).orElse("");
    }

    private String oldest(long horizon) {
        return query("SELECT id, topic, attempts FROM " + store.table() + " WHERE id <= " + horizon
                + " ORDER BY id LIMIT 1", rs -> rs.next() ? "id " + rs.getLong(1) + " (topic " + rs.getString(2)
                + ", " + rs.getInt(3) + " failed attempt(s))" : "(gone meanwhile)");
    }

    private Set<Long> parkedIds(long horizon) {
        return query("SELECT id FROM " + store.parkedTable() + " WHERE id <= " + horizon, rs -> {
            Set<Long> ids = new HashSet<>();
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
            return ids;
        });
    }

    private String newlyParked(long horizon, Set<Long> before) {
        return query("SELECT id, topic, reason FROM " + store.parkedTable() + " WHERE id <= " + horizon
                + " ORDER BY id", rs -> {
            while (rs.next()) {
                if (!before.contains(rs.getLong(1))) {
                    return "id " + rs.getLong(1) + " (topic " + rs.getString(2) + "): " + rs.getString(3);
                }
            }
            return null;
        });
    }

    private long queryLong(String sql) {
        return query(sql, rs -> {
            rs.next();
            return rs.getLong(1);
        });
    }

    private interface Rows<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private <T> T query(String sql, Rows<T> rows) {
        try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(sql);
             ResultSet rs = s.executeQuery()) {
            return rows.read(rs);
        } catch (SQLException e) {
            throw new IllegalStateException("OutboxAwait could not read the outbox (" + sql + "): " + e.getMessage(),
                    e);
        }
    }
}
