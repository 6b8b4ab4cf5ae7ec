package dev.outbox.store.sql;

import dev.outbox.spi.StoreException;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Handles;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.jdbi.v3.core.statement.SqlStatement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * How a SQL store's call takes a connection, bounds it in time, runs its transaction and gives the connection back;
 * one per store, shared by its parts (the base's writes and queries, the dialect's mark, read and replay).
 *
 * <p>Every call runs on a connection of its own from the store's {@link Jdbi}, with the connection's network timeout
 * set to twice the statement timeout (so that even a silent network failure ends the call) and restored
 * afterwards; every failure is translated by the dialect's {@link SqlErrors} into a {@link StoreException} naming the
 * operation. A transaction ({@link #inTransaction}) is begun on the connection, led by the dialect's prologue (a
 * statement that sets the transaction's isolation or timeouts) and committed, or rolled back on any failure; the
 * connection's auto-commit mode is restored. Where the dialect bounds statements by a JDBC query timeout
 * ({@link SqlDialect#queryTimeouts()}), {@link #prepare} and {@link #timed} set it.
 *
 * <p>For store implementations. Immutable and thread-safe.
 */
public final class SqlTransactions {
    private static final Logger log = LoggerFactory.getLogger(SqlTransactions.class);
    private static final Executor DIRECT = Runnable::run;

    private final Jdbi jdbi;
    private final SqlErrors errors;
    private final boolean queryTimeouts;
    private final int queryTimeoutSeconds;
    private final int networkTimeoutMillis;

    /**
     * The transactions of one store.
     *
     * @param jdbi             where the calls take their connections; not null
     * @param errors           how failures are translated; not null
     * @param statementTimeout the longest a statement may take; not null, positive (the network timeout is twice
     *                         it, the query timeout it in whole seconds rounded up, both capped at
     *                         {@link Integer#MAX_VALUE})
     * @param queryTimeouts    whether each statement carries the timeout as a JDBC query timeout
     * @throws NullPointerException if {@code jdbi}, {@code errors} or {@code statementTimeout} is null
     */
    public SqlTransactions(Jdbi jdbi, SqlErrors errors, Duration statementTimeout, boolean queryTimeouts) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi must not be null");
        this.errors = Objects.requireNonNull(errors, "errors must not be null");
        this.queryTimeouts = queryTimeouts;
        this.queryTimeoutSeconds = (int) Math.min(Integer.MAX_VALUE, (statementTimeout.toMillis() + 999) / 1000);
        this.networkTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, statementTimeout.toMillis() * 2);
    }

    /**
     * Work on a handle that may throw SQL exceptions.
     *
     * @param <T> the work's result
     */
    @FunctionalInterface
    public interface Work<T> {
        /**
         * Does the work on {@code handle}.
         *
         * @param handle the call's handle, open on its own connection; not to be kept after the call
         * @return the result, which the call returns; may be null
         * @throws SQLException as the driver throws it; the call translates it into a {@code StoreException}
         */
        T run(Handle handle) throws SQLException;
    }

    /**
     * The connections of the store, for an adapter that must hold one of its own (a listener).
     *
     * @return the store's Jdbi
     */
    public Jdbi jdbi() {
        return jdbi;
    }

    /**
     * The statement timeout as a JDBC query timeout: whole seconds, rounded up.
     *
     * @return the timeout in seconds; at least 1 for a positive statement timeout
     */
    public int queryTimeoutSeconds() {
        return queryTimeoutSeconds;
    }

    /**
     * Translates {@code failure} of {@code operation} by the dialect's rules ({@link SqlErrors#translate}).
     *
     * @param operation what failed, as the message names it
     * @param failure   the failure; not null
     * @return {@code failure} if it is a {@link StoreException}, else one wrapping it
     */
    public StoreException translate(String operation, Throwable failure) {
        return errors.translate(operation, failure);
    }

    /**
     * {@code statement}, with the query timeout if the dialect bounds statements by one.
     *
     * @param <S>       the Jdbi statement's type
     * @param statement the statement
     * @return {@code statement} itself
     */
    public <S extends SqlStatement<S>> S timed(S statement) {
        return queryTimeouts ? statement.setQueryTimeout(queryTimeoutSeconds) : statement;
    }

    /**
     * A prepared statement of {@code sql}, with the query timeout if the dialect bounds statements by one.
     *
     * @param connection the connection to prepare it on
     * @param sql        the statement's SQL
     * @return a new statement, which the caller closes
     * @throws SQLException as the driver throws it
     */
    public PreparedStatement prepare(Connection connection, String sql) throws SQLException {
        PreparedStatement statement = connection.prepareStatement(sql);
        if (queryTimeouts) {
            statement.setQueryTimeout(queryTimeoutSeconds);
        }
        return statement;
    }

    /**
     * Runs {@code work} in a transaction of its own and commits it: {@code prologue} (if not null) is its first
     * statement. On a connection bounded as {@link #withHandle} describes; leaves the connection's auto-commit mode
     * as it found it.
     *
     * <p>On a connection that is not in auto-commit mode, whatever was open on it is rolled back first.
     *
     * @param <T>       the work's result
     * @param operation what the transaction does, as a failure's message names it
     * @param prologue  the transaction's first statement, or null for none
     * @param work      the work; not null
     * @return what {@code work} returned, once committed
     * @throws StoreException if anything fails (taking the connection, the prologue, the work or the commit); the
     *                        transaction is then rolled back
     */
    public <T> T inTransaction(String operation, String prologue, Work<T> work) {
        return withHandle(operation, handle -> {
            // The transaction is ended here, on the connection; Jdbi must not second-guess that on close.
            handle.getConfig(Handles.class).setForceEndTransactions(false);
            Connection connection = handle.getConnection();
            boolean restoreAutoCommit = false;
            boolean committed = false;
            try {
                if (connection.getAutoCommit()) {
                    connection.setAutoCommit(false);
                    restoreAutoCommit = true;
                } else {
                    connection.rollback(); // ends whatever the pool left open, so that the prologue comes first
                }
                if (prologue != null) {
                    try (PreparedStatement statement = prepare(connection, prologue)) {
                        statement.execute();
                    }
                }
                T result = work.run(handle);
                connection.commit();
                committed = true;
                return result;
            } finally {
                endTransaction(connection, committed, restoreAutoCommit);
            }
        });
    }

    /**
     * Runs {@code work} on a connection of its own, with the connection's network timeout set to twice the
     * statement timeout and restored afterwards; translates every failure into a {@link StoreException} naming
     * {@code operation}. The work begins and ends its own transaction, if any.
     *
     * @param <T>       the work's result
     * @param operation what the call does, as a failure's message names it
     * @param work      the work; not null
     * @return what {@code work} returned
     * @throws StoreException if taking the connection or the work fails with an {@link SQLException}, a Jdbi
     *                        exception or an {@link IllegalStateException}; other runtime exceptions of the work
     *                        pass through untranslated
     */

    public <T> T withHandle(String operation, Work<T> work) {
        Handle handle;
        try {
            handle = jdbi.open();
        } catch (JdbiException | IllegalStateException e) {
            throw translate(operation, e);
        }
        Connection connection = handle.getConnection();
        Integer previousNetworkTimeout = null;
        try {
            previousNetworkTimeout = setNetworkTimeout(connection);
            return work.run(handle);
        } catch (SQLException | JdbiException | IllegalStateException e) {
            throw translate(operation, e);
        } finally {
            release(handle, connection, previousNetworkTimeout);
        }
    }

    private static void endTransaction(Connection connection, boolean committed, boolean restoreAutoCommit) {
        try {
            if (!committed) {
                connection.rollback();
            }
            if (restoreAutoCommit) {
                connection.setAutoCommit(true);
            }
        } catch (SQLException | RuntimeException e) {
            // A broken connection: the server rolls back whatever was open; the pool discards the connection.
            log.debug("Could not end a transaction cleanly", e);
        }
    }

    private Integer setNetworkTimeout(Connection connection) throws SQLException {
        try {
            int previous = connection.getNetworkTimeout();
            connection.setNetworkTimeout(DIRECT, networkTimeoutMillis);
            return previous;
        } catch (SQLFeatureNotSupportedException | UnsupportedOperationException e) {
            log.debug("The connection does not support a network timeout; relying on the statement timeout", e);
            return null;
        }
    }

    private static void release(Handle handle, Connection connection, Integer previousNetworkTimeout) {
        try {
            if (previousNetworkTimeout != null && !connection.isClosed()) {
                connection.setNetworkTimeout(DIRECT, previousNetworkTimeout);
            }
        } catch (SQLException | RuntimeException e) {
            log.debug("Could not restore the connection's network timeout", e);
        }
        try {
            handle.close();
        } catch (RuntimeException e) {
            // The work is done (committed or rolled back) by now; a broken connection fails to close quietly.
            log.debug("Could not close a connection cleanly", e);
        }
    }
}
