package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxRecord;

import javax.sql.DataSource;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * For an application's tests, on a SQL outbox (Postgres, MySQL, MariaDB, H2; the table harvest): waits until every
 * record committed before the call has been published — and, with {@link #untilApplied}, applied by an inbox
 * consumer — failing with what is still pending after a timeout, and at once when one of them was parked or given
 * up by the consumer.
 *
 * <p>It is a {@link DispatcherObserver}: attach it to the dispatcher that publishes the outbox, before the dispatcher
 * starts, so that it sees every record acknowledged (Spring Boot: declare it as a bean, the starter attaches every
 * {@code DispatcherObserver} bean; plain Java: {@code Dispatcher.builder(store, broker).observer(await)}). It reads
 * the outbox, parked and inbox tables with plain queries on the given {@code DataSource}s.
 *
 * <pre>{@code
 * @Bean OutboxAwait outboxAwait(DataSource dataSource) {                    // in the test's configuration
 *     return OutboxAwait.builder(dataSource).inbox(dataSource, "inbox").build();
 * }
 * ...
 * orders.place(order);                                                   // commits the order and its event
 * outboxAwait.untilApplied("billing", Duration.ofSeconds(10));            // Kafka has it, and billing applied it
 * }</pre>
 *
 * <p>"Committed before the call": every record whose id is at most the highest id in the outbox at the call, or
 * acknowledged before it. A record of a transaction still open at the call (the test's own {@code @Transactional})
 * is not. Thread-safe.
 */
public final class OutboxAwait implements DispatcherObserver {
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final int SHOWN = 3;

    private final DataSource dataSource;
    private final String table;
    private final String parkedTable;
    private final DataSource inboxDataSource;
    private final String inboxTable;
    private final String inboxFailedTable;
    private final Dispatcher dispatcher;
    /** Every record the dispatcher acknowledged since this was attached, by outbox id. */
    private final ConcurrentSkipListMap<Long, Published> acknowledged = new ConcurrentSkipListMap<>();
    private final AtomicLong highestAcknowledged = new AtomicLong();
    /** Per consumer, the message ids seen in its inbox: they stay applied. */
    private final Map<String, Set<UUID>> applied = new ConcurrentHashMap<>();

    private record Published(UUID messageId, String topic) {
    }

    private OutboxAwait(Builder b) {
        this.dataSource = b.dataSource;
        this.table = b.table;
        this.parkedTable = b.parkedTable != null ? b.parkedTable : suffixed(b.table, "_parked");
        this.inboxDataSource = b.inboxDataSource;
        this.inboxTable = b.inboxTable;
        this.inboxFailedTable = b.inboxTable == null ? null : suffixed(b.inboxTable, "_failed");
        this.dispatcher = b.dispatcher;
    }

    /**
     * A builder of a waiter over the outbox in {@code dataSource}.
     *
     * @param dataSource the outbox's database; not {@code null}
     * @return a builder with the table {@code outbox} and no inbox
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(Objects.requireNonNull(dataSource, "dataSource must not be null"));
    }

    /**
     * Notes a record the dispatcher published (called by the dispatcher).
     *
     * @param record            the record Kafka (or the broker) acknowledged
     * @param sendToAck         unused
     * @param commitToAck       unused
     */
    @Override
    public void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
        acknowledged.put(record.id(), new Published(record.messageId(), record.message().topic()));
        highestAcknowledged.accumulateAndGet(record.id(), Math::max);
    }

    /**
     * Waits until every record committed before this call has been published (acknowledged by the broker and
     * removed from the outbox table).
     *
     * @param timeout how long to wait at most; the tables are polled every 10 ms meanwhile
     * @throws AssertionError        if one of them is still in the outbox after {@code timeout}, or was parked
     * @throws IllegalStateException if a table cannot be read, or the calling thread is interrupted
     */
    public void untilPublished(Duration timeout) {
        published(System.nanoTime() + timeout.toNanos(), timeout, false);
    }

    /**
     * Waits until every record committed before this call has been published and then applied by the inbox consumer
     * {@code consumer} (its message id is in the inbox table for that consumer): all topics.
     *
     * @param consumer the consumer's name in the inbox ({@code KafkaInboxConsumer.consumerName()})
     * @param timeout  how long to wait at most, for both
     * @throws AssertionError        after {@code timeout}, naming how many are not applied and the first of them;
     *                               at once if one was parked, or the consumer gave up on one (its failed table)
     * @throws IllegalStateException without an inbox ({@link Builder#inbox}), if a table cannot be read, or if a
     *                               record was published by a dispatcher this waiter is not attached to
     */
    public void untilApplied(String consumer, Duration timeout) {
        untilApplied(consumer, Set.of(), timeout);
    }

    /**
     * As {@link #untilApplied(String, Duration)}, for the records of {@code topics} only (the topics the consumer
     * reads).
     *
     * @param consumer the consumer's name in the inbox
     * @param topics   the topics whose records it applies; empty for all
     * @param timeout  how long to wait at most, for both
     */
    public void untilApplied(String consumer, Set<String> topics, Duration timeout) {
        Objects.requireNonNull(consumer, "consumer must not be null");
        if (inboxTable == null) {
            throw new IllegalStateException("untilApplied needs the inbox's table: OutboxAwait.builder(…).inbox(…)");
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        long horizon = published(deadline, timeout, true);
        Map<UUID, Long> waiting = new HashMap<>();
        for (Map.Entry<Long, Published> e : acknowledged.headMap(horizon, true).entrySet()) {
            if (topics.isEmpty() || topics.contains(e.getValue().topic())) {
                waiting.put(e.getValue().messageId(), e.getKey());
            }
        }
        Set<UUID> done = applied.computeIfAbsent(consumer, c -> ConcurrentHashMap.newKeySet());
        waiting.keySet().removeAll(done);
        while (true) {
            Set<UUID> inInbox = ids(inboxDataSource, "SELECT message_id FROM " + inboxTable + " WHERE consumer = ?",
                    consumer);
            for (UUID id : inInbox) {
                if (waiting.remove(id) != null) {
                    done.add(id);
                }
            }
            if (waiting.isEmpty()) {
                return;
            }
            String failed = failed(consumer, waiting);
            if (failed != null) {
                throw new AssertionError("consumer " + consumer + " gave up on a record published before the call: "
                        + failed);
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new AssertionError("not applied within " + timeout + " by consumer " + consumer + ": "
                        + waiting.size() + " published record(s) of " + table + " are not in " + inboxTable
                        + ", the first " + first(waiting) + " (" + inInbox.size() + " message(s) applied by it)");
            }
            pause();
        }
    }

    /**
     * Waits for the outbox to be published up to the horizon; returns the horizon. With {@code needIds}, every record
     * that was in the outbox must have been acknowledged through this observer (else its message id is unknown).
     */
    private long published(long deadline, Duration timeout, boolean needIds) {
        long inTable = queryLong("SELECT COALESCE(MAX(id), 0) FROM " + table);
        long horizon = Math.max(inTable, highestAcknowledged.get());
        Set<Long> pending = longs("SELECT id FROM " + table + " WHERE id <= " + horizon);
        Set<Long> parkedBefore = longs("SELECT id FROM " + parkedTable + " WHERE id <= " + horizon);
        while (true) {
            long left = queryLong("SELECT COUNT(*) FROM " + table + " WHERE id <= " + horizon);
            if (left == 0) {
                break;
            }
            String parked = newlyParked(horizon, parkedBefore);
            if (parked != null) {
                throw new AssertionError("an outbox record committed before the call was parked, not published: "
                        + parked);
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new AssertionError("not published within " + timeout + ": " + left + " outbox record(s) of "
                        + table + " committed before the call (ids up to " + horizon + ") are left, the oldest "
                        + oldest(horizon) + "; " + dispatcherState());
            }
            pause();
        }
        if (!needIds) {
            return horizon;
        }
        // The dispatcher may purge a row before this observer hears of its acknowledgement: wait for that too.
        while (true) {
            pending.removeAll(acknowledged.keySet());
            if (pending.isEmpty()) {
                return horizon;
            }
            pending.removeAll(longs("SELECT id FROM " + parkedTable + " WHERE id <= " + horizon));
            if (pending.isEmpty()) {
                return horizon;
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new IllegalStateException("outbox record(s) " + first(pending) + " left the outbox, but this"
                        + " OutboxAwait did not see them acknowledged within " + timeout + ": published by a"
                        + " dispatcher it is not attached to? (attach it as the publishing dispatcher's observer"
                        + " before it starts): their message ids are unknown here");
            }
            pause();
        }
    }

    private static void pause() {
        if (Thread.currentThread().isInterrupted()) {
            throw new IllegalStateException("interrupted while waiting for the outbox");
        }
        LockSupport.parkNanos(POLL_NANOS);
    }

    private String dispatcherState() {
        if (dispatcher == null) {
            return "dispatcher not given (OutboxAwait.builder(…).dispatcher(…) names its state here)";
        }
        DispatcherHealth h = dispatcher.health();
        return "the dispatcher is " + dispatcher.state() + ", " + h.status()
                + h.lastFailure().map(f -> ", last failure: " + f.operation() + ": " + f.error()).orElse("");
    }

    private String oldest(long horizon) {
        return query(dataSource, "SELECT id, topic, attempts FROM " + table + " WHERE id <= " + horizon
                + " ORDER BY id", null, rs -> rs.next() ? "id " + rs.getLong(1) + " (topic " + rs.getString(2)
                + ", " + rs.getInt(3) + " failed attempt(s))" : "(gone meanwhile)");
    }

    private String newlyParked(long horizon, Set<Long> before) {
        return query(dataSource, "SELECT id, topic, reason FROM " + parkedTable + " WHERE id <= " + horizon
                + " ORDER BY id", null, rs -> {
            while (rs.next()) {
                if (!before.contains(rs.getLong(1))) {
                    return "id " + rs.getLong(1) + " (topic " + rs.getString(2) + "): " + rs.getString(3);
                }
            }
            return null;
        });
    }

    private String failed(String consumer, Map<UUID, Long> waiting) {
        return query(inboxDataSource, "SELECT message_id, topic, reason FROM " + inboxFailedTable
                + " WHERE consumer = ?", consumer, rs -> {
            while (rs.next()) {
                UUID id = uuid(rs.getObject(1));
                if (waiting.containsKey(id)) {
                    return "message " + id + " (outbox id " + waiting.get(id) + ", topic " + rs.getString(2) + "): "
                            + rs.getString(3);
                }
            }
            return null;
        });
    }

    private String first(Map<UUID, Long> waiting) {
        Map.Entry<UUID, Long> first = waiting.entrySet().stream().min(Map.Entry.comparingByValue()).orElseThrow();
        Published p = acknowledged.get(first.getValue());
        return "message " + first.getKey() + " (outbox id " + first.getValue() + ", topic " + p.topic() + ")";
    }

    private static String first(Set<Long> ids) {
        List<Long> sorted = new ArrayList<>(ids);
        sorted.sort(null);
        return sorted.subList(0, Math.min(SHOWN, sorted.size())) + (sorted.size() > SHOWN ? " and "
                + (sorted.size() - SHOWN) + " more" : "");
    }

    private long queryLong(String sql) {
        return query(dataSource, sql, null, rs -> {
            rs.next();
            return rs.getLong(1);
        });
    }

    private Set<Long> longs(String sql) {
        return query(dataSource, sql, null, rs -> {
            Set<Long> ids = new HashSet<>();
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
            return ids;
        });
    }

    private static Set<UUID> ids(DataSource db, String sql, String consumer) {
        return query(db, sql, consumer, rs -> {
            Set<UUID> ids = new HashSet<>();
            while (rs.next()) {
                ids.add(uuid(rs.getObject(1)));
            }
            return ids;
        });
    }

    /** A message id as the driver returns it: a {@code UUID} (Postgres, H2) or 16 bytes (MySQL, MariaDB). */
    private static UUID uuid(Object value) {
        if (value instanceof UUID u) {
            return u;
        }
        if (value instanceof byte[] b && b.length == 16) {
            ByteBuffer buffer = ByteBuffer.wrap(b);
            return new UUID(buffer.getLong(), buffer.getLong());
        }
        if (value instanceof String s) {
            return UUID.fromString(s);
        }
        throw new IllegalStateException("not a message id: " + value);
    }

    private interface Rows<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private static <T> T query(DataSource db, String sql, String parameter, Rows<T> rows) {
        try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            if (parameter != null) {
                s.setString(1, parameter);
            }
            try (ResultSet rs = s.executeQuery()) {
                return rows.read(rs);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("OutboxAwait could not read (" + sql + "): " + e.getMessage(), e);
        }
    }

    /** {@code "schema"."table"} with {@code suffix} appended to the table's name, inside its quotes if any. */
    private static String suffixed(String quoted, String suffix) {
        char last = quoted.charAt(quoted.length() - 1);
        return last == '"' || last == '`' ? quoted.substring(0, quoted.length() - 1) + suffix + last : quoted + suffix;
    }

    /** Builds an {@link OutboxAwait}. Not thread-safe. */
    public static final class Builder {
        private final DataSource dataSource;
        private String table = "outbox";
        private String parkedTable;
        private DataSource inboxDataSource;
        private String inboxTable;
        private Dispatcher dispatcher;

        private Builder(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        /**
         * The outbox table as it appears in SQL (quoted or schema-qualified as you need); {@code outbox} by default.
         *
         * @param table the table; not blank
         * @return this builder
         */
        public Builder table(String table) {
            if (table == null || table.isBlank()) {
                throw new IllegalArgumentException("table must not be blank, got '" + table + "'");
            }
            this.table = table.strip();
            return this;
        }

        /**
         * The parked table as it appears in SQL; {@code <table>_parked} by default.
         *
         * @param parkedTable the table; not blank
         * @return this builder
         */
        public Builder parkedTable(String parkedTable) {
            if (parkedTable == null || parkedTable.isBlank()) {
                throw new IllegalArgumentException("parkedTable must not be blank, got '" + parkedTable + "'");
            }
            this.parkedTable = parkedTable.strip();
            return this;
        }

        /**
         * The inbox the consumers apply messages through, for {@link #untilApplied}: its table as it appears in SQL
         * ({@code inbox} by default in the inbox's builders), its failed messages in {@code <table>_failed}.
         *
         * @param inboxDataSource the inbox's database (often the outbox's); not {@code null}
         * @param inboxTable      the inbox's table; not blank
         * @return this builder
         */
        public Builder inbox(DataSource inboxDataSource, String inboxTable) {
            if (inboxTable == null || inboxTable.isBlank()) {
                throw new IllegalArgumentException("inboxTable must not be blank, got '" + inboxTable + "'");
            }
            this.inboxDataSource = Objects.requireNonNull(inboxDataSource, "inboxDataSource must not be null");
            this.inboxTable = inboxTable.strip();
            return this;
        }

        /**
         * The dispatcher, whose state a timeout's message names; optional.
         *
         * @param dispatcher the dispatcher this waiter observes, or {@code null}
         * @return this builder
         */
        public Builder dispatcher(Dispatcher dispatcher) {
            this.dispatcher = dispatcher;
            return this;
        }

        /**
         * The waiter; attach it to the dispatcher as an observer before the dispatcher starts.
         *
         * @return a new waiter
         */
        public OutboxAwait build() {
            return new OutboxAwait(this);
        }
    }
}
