package dev.outbox.examples;

import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The demo's "orders service": places an order — one row in {@code orders}, one increment of the customer's
 * order count, one outbox message — in a single transaction, with plain JDBC.
 *
 * <p>The customer's row lock orders the transactions of one customer: the second order of a customer is written
 * only after the first committed, so its outbox row gets a larger id, and the dispatcher publishes it second.
 * The message carries the customer's order number ({@code customer-seq}), which lets the consumer check order.
 *
 * <p>Thread-safe: any number of threads may place orders at once.
 */
final class OrderService {
    /** Header naming the demo run, so a consumer on a shared topic counts only its own records. */
    static final String RUN_HEADER = "demo-run";
    /** Header with the customer's order number: 1, 2, 3, ... per customer. */
    static final String SEQ_HEADER = "customer-seq";
    /** Header with the order's id. */
    static final String ORDER_HEADER = "order-id";

    private final DataSource dataSource;
    private final Publisher publisher;
    private final String schema;
    private final String topic;
    private final String runId;
    private final LatencyClock clock;
    private final Map<String, KeyRange> written = new ConcurrentHashMap<>();
    private final AtomicLong committed = new AtomicLong();
    private final AtomicLong rolledBack = new AtomicLong();

    OrderService(DataSource dataSource, Publisher publisher, String schema, String topic, String runId,
                 LatencyClock clock) {
        this.dataSource = Objects.requireNonNull(dataSource);
        this.publisher = Objects.requireNonNull(publisher);
        this.schema = Objects.requireNonNull(schema);
        this.topic = Objects.requireNonNull(topic);
        this.runId = Objects.requireNonNull(runId);
        this.clock = Objects.requireNonNull(clock);
    }

    /** Creates the demo's own tables (the outbox is created by the store) and {@code customers} customers. */
    static void createTables(DataSource dataSource, String schema, int customers) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS " + schema + ".customers ("
                    + " id integer PRIMARY KEY,"
                    + " orders_placed bigint NOT NULL DEFAULT 0)");
            s.execute("CREATE TABLE IF NOT EXISTS " + schema + ".orders ("
                    + " id bigserial PRIMARY KEY,"
                    + " customer_id integer NOT NULL REFERENCES " + schema + ".customers,"
                    + " customer_seq bigint NOT NULL,"
                    + " amount_cents bigint NOT NULL,"
                    + " placed_at timestamptz NOT NULL DEFAULT now())");
            s.execute("INSERT INTO " + schema + ".customers (id) SELECT g FROM generate_series(1, " + customers
                    + ") g ON CONFLICT DO NOTHING");
        }
    }

    /**
     * Places one order for {@code customer} and its {@code OrderPlaced} message, atomically.
     *
     * @param dueNanos when the order was due by its writer's schedule ({@link System#nanoTime()}), for the latency
     *                 corrected for coordinated omission
     * @return whether it committed; a failed transaction is rolled back and counted
     */
    boolean placeOrder(int customer, long amountCents, long dueNanos) {
        long orderId = -1;
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                long seq;
                try (PreparedStatement s = c.prepareStatement("UPDATE " + schema + ".customers"
                        + " SET orders_placed = orders_placed + 1 WHERE id = ? RETURNING orders_placed")) {
                    s.setInt(1, customer);
                    seq = single(s);
                }
                try (PreparedStatement s = c.prepareStatement("INSERT INTO " + schema + ".orders"
                        + " (customer_id, customer_seq, amount_cents) VALUES (?, ?, ?) RETURNING id")) {
                    s.setInt(1, customer);
                    s.setLong(2, seq);
                    s.setLong(3, amountCents);
                    orderId = single(s);
                }
                String key = "customer-" + customer;
                publisher.publish(c, OutboxMessage.builder(topic, key)
                        .value("{\"type\":\"OrderPlaced\",\"orderId\":" + orderId + ",\"customer\":" + customer
                                + ",\"customerSeq\":" + seq + ",\"amountCents\":" + amountCents + "}")
                        .header(RUN_HEADER, runId)
                        .header(SEQ_HEADER, Long.toString(seq))
                        .header(ORDER_HEADER, Long.toString(orderId))
                        .build());
                clock.committing(orderId, dueNanos);
                c.commit();
                written.computeIfAbsent(key, k -> new KeyRange()).add(seq);
                committed.incrementAndGet();
                return true;
            } catch (SQLException | RuntimeException e) {
                clock.forget(orderId);
                c.rollback();
                rolledBack.incrementAndGet();
                return false;
            }
        } catch (SQLException e) {
            clock.forget(orderId);
            rolledBack.incrementAndGet();
            return false;
        }
    }

    private static long single(PreparedStatement s) throws SQLException {
        try (ResultSet rs = s.executeQuery()) {
            if (!rs.next()) {
                throw new SQLException("statement returned no row: " + s);
            }
            return rs.getLong(1);
        }
    }

    /** Orders committed so far. */
    long committed() {
        return committed.get();
    }

    /** Transactions that failed and were rolled back. */
    long rolledBack() {
        return rolledBack.get();
    }

    /** Per key, the range of order numbers committed in this run. */
    Map<String, KeyRange> written() {
        return Map.copyOf(written);
    }

    /**
     * The order numbers of one customer committed in this run. The customer's row lock makes them consecutive,
     * whatever order the writer threads record them in. Thread-safe.
     */
    static final class KeyRange {
        private long first = Long.MAX_VALUE;
        private long last = Long.MIN_VALUE;
        private long count;

        synchronized void add(long seq) {
            first = Math.min(first, seq);
            last = Math.max(last, seq);
            count++;
        }

        synchronized long first() {
            return first;
        }

        synchronized long last() {
            return last;
        }

        synchronized long count() {
            return count;
        }
    }
}
