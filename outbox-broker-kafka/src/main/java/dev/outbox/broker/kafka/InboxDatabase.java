package dev.outbox.broker.kafka;

import dev.outbox.spi.Backoff;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

/**
 * The consumer's one connection and the database's outages: the connection is opened on demand (auto-commit off),
 * dropped after a failure, and the next try waits with backoff that grows with the failures in a row. Used by the
 * consumer thread only; not thread-safe.
 */
final class InboxDatabase {
    private static final int VALIDITY_CHECK_SECONDS = 5;
    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    private final DataSource dataSource;
    private final Backoff retries;
    private final KafkaInboxConsumer.Listener listener;
    private final String consumerName;
    private Connection connection;
    private long retryAt;
    private int failures;

    InboxDatabase(DataSource dataSource, Backoff retries, KafkaInboxConsumer.Listener listener, String consumerName) {
        this.dataSource = dataSource;
        this.retries = retries;
        this.listener = listener;
        this.consumerName = consumerName;
    }

    /** Nanoseconds until the database may be tried again after a failure; zero or less when it may now. */
    long nanosUntilRetry(long now) {
        return retryAt - now;
    }

    /** The connection, opened if there is none. */
    Connection connection() throws SQLException {
        if (connection == null) {
            Connection c = dataSource.getConnection();
            try {
                c.setAutoCommit(false);
            } catch (SQLException e) {
                c.close();
                throw e;
            }
            connection = c;
        }
        return connection;
    }

    /** Whether the connection still works (after a handler failure: if not, the failure was the database's). */
    boolean connectionValid() {
        try {
            return connection != null && connection.isValid(VALIDITY_CHECK_SECONDS);
        } catch (SQLException e) {
            return false;
        }
    }

    /** Rolls back the open transaction, if it can. */
    void rollback() {
        if (connection != null) {
            try {
                connection.rollback();
            } catch (SQLException | RuntimeException e) {
                log.debug("rollback failed", e);
            }
        }
    }

    /** A transaction went through: the failures in a row start again from zero. */
    void succeeded() {
        failures = 0;
    }

    /** The database failed: drops the connection and waits with backoff before the next try. */
    void failed(Throwable e) {
        close();
        failures++;
        long backoff = retries.nanos(failures);
        retryAt = System.nanoTime() + backoff;
        log.warn("Inbox consumer {}: the database failed ({} in a row), retrying in {} ms: {}", consumerName,
                failures, TimeUnit.NANOSECONDS.toMillis(backoff), e.toString());
        listener.databaseUnavailable(e);
    }

    /** Closes the connection, if there is one. */
    void close() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException | RuntimeException e) {
                log.debug("closing a broken connection", e);
            }
            connection = null;
        }
    }
}
