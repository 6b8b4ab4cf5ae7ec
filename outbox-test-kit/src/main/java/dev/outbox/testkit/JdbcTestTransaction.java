package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

/**
 * A {@link TestTransaction} over a JDBC connection, for stores whose publisher writes with plain JDBC: turns
 * auto-commit off, publishes through {@link Publisher#publish(Connection, List)}, and commits or rolls back the
 * connection. The connection is closed when the transaction ends.
 *
 * <pre>{@code
 * protected TestTransaction begin(Store store) {
 *     return JdbcTestTransaction.begin(dataSource, store.publisher());
 * }
 * }</pre>
 *
 * <p>Not thread-safe, like the connection it owns.
 */
public final class JdbcTestTransaction implements TestTransaction {
    private final Connection connection;
    private final Publisher publisher;
    private boolean ended;

    private JdbcTestTransaction(Connection connection, Publisher publisher) {
        this.connection = Objects.requireNonNull(connection, "connection");
        this.publisher = Objects.requireNonNull(publisher, "publisher");
        try {
            connection.setAutoCommit(false);
        } catch (SQLException e) {
            closeQuietly();
            throw new IllegalStateException("cannot turn auto-commit off: " + e.getMessage(), e);
        }
    }

    /**
     * Begins a transaction on {@code connection}, which it takes over and closes when it ends.
     *
     * @param connection an open connection to the store's database; its auto-commit is turned off. Not
     *                   {@code null}.
     * @param publisher  the store's publisher ({@code store.publisher()}); not {@code null}
     * @return a new open transaction
     * @throws NullPointerException  if {@code connection} or {@code publisher} is {@code null}
     * @throws IllegalStateException if auto-commit cannot be turned off (the connection is then closed)
     */
    public static JdbcTestTransaction begin(Connection connection, Publisher publisher) {
        return new JdbcTestTransaction(connection, publisher);
    }

    /**
     * Begins a transaction on a new connection from {@code dataSource}.
     *
     * @param dataSource where the connection comes from: the store's database; not {@code null}
     * @param publisher  the store's publisher ({@code store.publisher()}); not {@code null}
     * @return a new open transaction, owning its connection
     * @throws NullPointerException  if {@code dataSource} or {@code publisher} is {@code null}
     * @throws IllegalStateException if no connection can be had or its auto-commit cannot be turned off
     */
    public static JdbcTestTransaction begin(DataSource dataSource, Publisher publisher) {
        Objects.requireNonNull(dataSource, "dataSource");
        try {
            return new JdbcTestTransaction(dataSource.getConnection(), publisher);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot open a connection: " + e.getMessage(), e);
        }
    }

    /**
     * The connection this transaction runs on, for tests that write more in the same transaction.
     *
     * @return the connection, auto-commit off; closed once the transaction has ended. Do not commit, roll back
     *         or close it directly.
     */
    public Connection connection() {
        return connection;
    }

    @Override
    public void publish(List<OutboxMessage> messages) {
        checkOpen("publish");
        publisher.publish(connection, messages);
    }

    @Override
    public void commit() {
        checkOpen("commit");
        ended = true;
        try {
            connection.commit();
        } catch (SQLException e) {
            throw new IllegalStateException("commit failed: " + e.getMessage(), e);
        } finally {
            closeQuietly();
        }
    }

    @Override
    public void rollback() {
        checkOpen("rollback");
        ended = true;
        try {
            connection.rollback();
        } catch (SQLException e) {
            throw new IllegalStateException("rollback failed: " + e.getMessage(), e);
        } finally {
            closeQuietly();
        }
    }

    @Override
    public void close() {
        if (!ended) {
            rollback();
        }
    }

    private void checkOpen(String operation) {
        if (ended) {
            throw new IllegalStateException("cannot " + operation + ": the transaction has ended");
        }
    }

    private void closeQuietly() {
        try {
            connection.close();
        } catch (SQLException ignored) {
            // the transaction has ended either way; nothing a test could do about a failed close
        }
    }
}
