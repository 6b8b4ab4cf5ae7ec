package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.Delivery;
import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import dev.outbox.InboxHandlerException;
import dev.outbox.spi.Backoff;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Applies one delivery at a time through the inbox, for {@link RabbitMqInboxConsumer}: a transaction per message
 * ({@link Inbox#process}, the handler, COMMIT), handler failures retried with backoff on the same message and
 * recorded as failed after the last attempt, database failures retried without counting. Owns the consumer's
 * database connection, kept from message to message and replaced after a failure.
 *
 * <p>Not thread-safe: used by the consumer's thread only; the counters may be read from any thread.
 */
final class InboxWorker {
    private static final Logger log = LoggerFactory.getLogger(RabbitMqInboxConsumer.class);

    /** Waits between attempts; returns early when the consumer closes. */
    interface Pause {
        void await(long nanos) throws InterruptedException;
    }

    private final String consumerName;
    private final DataSource dataSource;
    private final Inbox inbox;
    private final RabbitMqInboxConsumer.MessageHandler handler;
    private final int maxAttempts;
    private final Backoff retries;
    private final Pause pause;
    private final AtomicLong applied = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private java.sql.Connection database;

    InboxWorker(String consumerName, DataSource dataSource, Inbox inbox, RabbitMqInboxConsumer.MessageHandler handler,
                int maxAttempts, Backoff retries, Pause pause) {
        this.consumerName = consumerName;
        this.dataSource = dataSource;
        this.inbox = inbox;
        this.handler = handler;
        this.maxAttempts = maxAttempts;
        this.retries = retries;
        this.pause = pause;
    }

    long applied() {
        return applied.get();
    }

    long duplicates() {
        return duplicates.get();
    }

    long failed() {
        return failed.get();
    }

    /**
     * Works on one delivery until it is done (applied, a duplicate, or recorded as failed: then
     * {@code acknowledge} runs) or no longer {@code current} (the consumer closes, or its channel was recovered).
     */
    void process(Delivery d, BooleanSupplier current, Runnable acknowledge) throws InterruptedException {
        UUID found = RabbitMqHeaders.messageId(d.getProperties());
        UUID id = found != null ? found : UUID.randomUUID();
        int attempts = 0;
        int databaseFailures = 0;
        Throwable last = null;
        while (current.getAsBoolean()) {
            try {
                java.sql.Connection c = database();
                try {
                    if (attempts >= maxAttempts) {
                        FailedMessage f = new FailedMessage(consumerName, id, d.getEnvelope().getExchange(), -1, -1,
                                d.getEnvelope().getRoutingKey(), RabbitMqHeaders.value(d.getProperties(), d.getBody()),
                                attempts, String.valueOf(last), null);
                        inbox.recordFailure(c, f);
                        c.commit();
                        failed.incrementAndGet();
                        log.error("Inbox consumer {} gave up on message {} (routing key '{}') after {} attempts: {}",
                                consumerName, id, d.getEnvelope().getRoutingKey(), attempts, String.valueOf(last));
                    } else if (inbox.process(c, consumerName, id, tx -> handler.handle(tx, d, id))) {
                        c.commit();
                        applied.incrementAndGet();
                    } else {
                        c.commit();
                        duplicates.incrementAndGet();
                    }
                    acknowledge.run();
                    return;
                } catch (InboxHandlerException e) {
                    c.rollback();
                    if (!c.isValid(5)) {
                        throw new SQLException("connection no longer valid after the handler failed", e.getCause());
                    }
                    attempts++;
                    last = e.getCause();
                    log.warn("Inbox consumer {}: handler failed on message {}, attempt {} of {}", consumerName, id,
                            attempts, maxAttempts, e.getCause());
                    pause.await(retries.nanos(attempts));
                }
            } catch (SQLException | RuntimeException e) {
                closeDatabase();
                databaseFailures++;
                log.warn("Inbox consumer {}: the database failed ({} in a row) on message {}; retrying: {}",
                        consumerName, databaseFailures, id, e.toString());
                pause.await(retries.nanos(databaseFailures));
            }
        }
    }

    /** The consumer's database connection, kept from message to message; opened when there is none. */
    private java.sql.Connection database() throws SQLException {
        if (database == null) {
            database = dataSource.getConnection();
            database.setAutoCommit(false);
        }
        return database;
    }

    /** Closes the database connection, if there is one; on the consumer's thread. */
    void closeDatabase() {
        if (database != null) {
            try {
                database.close();
            } catch (SQLException e) {
                log.debug("Inbox consumer {}: closing a failed connection: {}", consumerName, e.toString());
            }
            database = null;
        }
    }
}
