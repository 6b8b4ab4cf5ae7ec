package dev.outbox.spring;

import dev.outbox.OutboxException;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.PayloadSerializer;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

/**
 * Writes outbox messages inside the current Spring transaction: on the connection that the transaction holds for
 * the outbox's {@link DataSource} (through {@link DataSourceUtils}), so the messages commit or roll back with the
 * {@code @Transactional} method that publishes them — with a {@code DataSourceTransactionManager}
 * ({@code JdbcTemplate}, {@code JdbcClient}) and with a {@code JpaTransactionManager} (Hibernate), which exposes
 * its JDBC connection to the same {@code DataSource}.
 *
 * <pre>{@code
 * @Transactional
 * public Order place(NewOrder request) {
 *     Order order = orders.save(...);
 *     outbox.publish("orders", order.customer(), new OrderPlaced(order.id(), order.customer()));   // JSON
 *     return order;
 * }
 * }</pre>
 *
 * <p>With no transaction active on that {@code DataSource}, {@code publish} throws
 * {@link IllegalTransactionStateException} (the message would otherwise be committed on its own, whatever happens
 * to the caller's work), unless {@code outbox.publisher.require-transaction=false}: then each call writes and
 * commits by itself. A transaction that is active but holds no connection of the outbox's {@code DataSource}
 * (a transaction manager for another database, or a JTA transaction without it) is refused the same way.
 *
 * <p>Thread-safe; a singleton bean shared by all threads.
 */
public final class OutboxPublisher {
    private final DataSource dataSource;
    private final Publisher publisher;
    private final PayloadSerializer serializer;
    private final boolean requireTransaction;

    /**
     * @param dataSource         the DataSource the outbox table lives in (the one transactions are bound to)
     * @param publisher          the store's publisher
     * @param serializer         turns payload objects into message values
     * @param requireTransaction whether a publish outside a transaction is refused
     */
    public OutboxPublisher(DataSource dataSource, Publisher publisher, PayloadSerializer serializer,
                           boolean requireTransaction) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.publisher = Objects.requireNonNull(publisher, "publisher");
        this.serializer = Objects.requireNonNull(serializer, "serializer");
        this.requireTransaction = requireTransaction;
    }

    /**
     * Writes a message whose value is {@code payload} serialized by the application's serializer (JSON by
     * default, with a {@code content-type} header); a null payload writes a tombstone.
     *
     * @param topic   the Kafka topic the message goes to; a valid topic name
     * @param key     the message key, which orders messages (same key, same partition, in order); {@code null}
     *                for none
     * @param payload the value, serialized by the application's {@code PayloadSerializer}; {@code null} for a
     *                tombstone
     * @throws IllegalArgumentException        if the topic or key is invalid, or the message does not fit the
     *                                         store, naming the bad value
     * @throws IllegalTransactionStateException if no transaction is active on the outbox's DataSource (see above)
     * @throws OutboxException                  if the payload cannot be serialized or the database rejects the write
     */
    public void publish(String topic, String key, Object payload) {
        publish(serializer.message(topic, key, payload));
    }

    /**
     * A message builder holding {@code payload} serialized as {@link #publish(String, String, Object)} would write
     * it (value and headers), for the per-message delivery options (docs/delivery-options.md) before
     * {@link #publish(OutboxMessage)}:
     *
     * <pre>{@code
     * outbox.publish(outbox.message("reminders", orderId, new Reminder(orderId))
     *         .deliverAfter(Duration.ofHours(24))             // outbox.store.scheduling=true
     *         .idempotencyKey("reminder-" + orderId)          // outbox.store.idempotency.retention=7d
     *         .build());
     * }</pre>
     *
     * Writes nothing, and needs no transaction.
     *
     * @param topic   the Kafka topic the message goes to
     * @param key     the message key; {@code null} for none
     * @param payload the value, serialized by the application's {@code PayloadSerializer}; {@code null} for a
     *                tombstone
     * @return a new builder with the serialized value and the serializer's headers
     * @throws IllegalArgumentException if the topic or key is invalid, naming it
     * @throws OutboxException          if the payload cannot be serialized
     */
    public OutboxMessage.Builder message(String topic, String key, Object payload) {
        OutboxMessage m = serializer.message(topic, key, payload);
        OutboxMessage.Builder b = OutboxMessage.builder(m.topic(), m.key()).value(m.value());
        m.headers().forEach(h -> b.header(h.name(), h.value()));
        return b;
    }

    /**
     * Writes {@code message} in the current transaction; see {@link #publish(String, String, Object)}.
     *
     * @param message the message as built ({@code OutboxMessage.of}, {@code OutboxMessage.builder}); not
     *                {@code null}
     * @throws NullPointerException if {@code message} is {@code null}
     */
    public void publish(OutboxMessage message) {
        publish(List.of(Objects.requireNonNull(message, "message must not be null")));
    }

    /**
     * Writes {@code messages}, in order, in the current transaction, as one batch.
     *
     * @param messages the messages, in the order their keys' consumers see them; not {@code null}, no
     *                 {@code null} element; may be empty (nothing is written)
     * @throws NullPointerException if {@code messages} is {@code null}
     */
    public void publish(List<OutboxMessage> messages) {
        Objects.requireNonNull(messages, "messages must not be null");
        boolean bound = TransactionSynchronizationManager.isActualTransactionActive()
                && TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder;
        if (bound) {
            Connection c = DataSourceUtils.getConnection(dataSource);
            try {
                publisher.publish(c, messages);
            } finally {
                DataSourceUtils.releaseConnection(c, dataSource);
            }
            wakeAfterCommit();
            return;
        }
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalTransactionStateException("A transaction is active, but it holds no connection of the"
                    + " outbox's DataSource, so the outbox message could not commit or roll back with it: use a"
                    + " transaction manager for that DataSource (DataSourceTransactionManager, or a"
                    + " JpaTransactionManager whose DataSource it is)");
        }
        if (requireTransaction) {
            throw new IllegalTransactionStateException("No transaction is active: call OutboxPublisher.publish"
                    + " inside a @Transactional method (or a TransactionTemplate), so that the message commits or"
                    + " rolls back with your changes. To write messages on their own, set"
                    + " outbox.publisher.require-transaction=false");
        }
        publishAlone(messages);
    }

    /** No transaction and none required: write and commit on a connection of our own. */
    private void publishAlone(List<OutboxMessage> messages) {
        Connection c = DataSourceUtils.getConnection(dataSource);
        try {
            boolean autoCommit = c.getAutoCommit();
            publisher.publish(c, messages);
            if (!autoCommit) {
                c.commit();
            }
            publisher.committed();
        } catch (SQLException e) {
            throw new OutboxException("could not commit " + messages.size() + " outbox message(s)", e);
        } finally {
            DataSourceUtils.releaseConnection(c, dataSource);
        }
    }

    /**
     * Once per transaction: after it commits, tells the publisher ({@link Publisher#committed()}), so that a leading
     * dispatcher in this process reads at once (what wakes it on MySQL/MariaDB, which cannot notify; on Postgres it
     * comes about a millisecond before the notification).
     */
    private void wakeAfterCommit() {
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            return;
        }
        for (TransactionSynchronization s : TransactionSynchronizationManager.getSynchronizations()) {
            if (s instanceof CommitNudge nudge && nudge.publisher == publisher) {
                return; // this transaction's already
            }
        }
        TransactionSynchronizationManager.registerSynchronization(new CommitNudge(publisher));
    }

    /** Tells the publisher of a commit ({@link #wakeAfterCommit}); suspended and resumed with its transaction. */
    private record CommitNudge(Publisher publisher) implements TransactionSynchronization {
        @Override
        public void afterCommit() {
            publisher.committed();
        }
    }

    @Override
    public String toString() {
        return "OutboxPublisher{" + publisher + ", requireTransaction=" + requireTransaction + '}';
    }
}
