package dev.outbox.store.postgres;

import dev.outbox.spi.StoreException;

import java.io.IOException;
import java.net.SocketException;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.Set;

/**
 * Translates driver and Jdbi exceptions into {@link StoreException}, deciding whether a retry may help.
 * Stateless and thread-safe.
 */
final class PostgresErrors {
    /** Individual SQLSTATEs, outside the retriable classes, that a retry may cure. */
    private static final Set<String> RETRIABLE_STATES = Set.of(
            "57014", // query_canceled: the statement timeout expired
            "57P01", // admin_shutdown: the backend was terminated (pg_terminate_backend, server shutting down)
            "57P02", // crash_shutdown
            "57P03", // cannot_connect_now: the server is starting up
            "57P05", // idle_session_timeout
            "55P03", // lock_not_available: lock_timeout expired
            "25006", // read_only_sql_transaction: connected to a standby, e.g. during a fail-over
            "25P03", // idle_in_transaction_session_timeout
            "53200", // out_of_memory
            "53300", // too_many_connections
            "58030"  // io_error on the server
    );

    private PostgresErrors() {
    }

    /**
     * Wraps {@code failure}, whose message goes into the new exception's message after {@code operation}.
     */
    static StoreException translate(String operation, Throwable failure) {
        if (failure instanceof StoreException store) {
            return store;
        }
        SQLException sql = findSqlException(failure);
        String state = sql == null ? null : sql.getSQLState();
        boolean retriable = isRetriable(failure);
        String detail = sql != null ? sql.getMessage() : failure.getMessage();
        if (sql != null && sql.getNextException() != null) {
            detail += " (" + sql.getNextException().getMessage() + ")";
        }
        String message = operation + " failed" + (state == null ? "" : " (SQLSTATE " + state + ")") + ": "
                + detail + (retriable ? "; retriable" : "; not retriable");
        return new StoreException(message, failure, retriable);
    }

    /** Whether trying again later may succeed. */
    static boolean isRetriable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql) {
                for (SQLException e = sql; e != null; e = e.getNextException()) {
                    if (isRetriableState(e.getSQLState())) {
                        return true;
                    }
                    if (e instanceof SQLTransientException || e instanceof SQLRecoverableException) {
                        return true;
                    }
                }
            }
            if (t instanceof SocketException || t instanceof IOException) {
                return true;
            }
        }
        return false;
    }

    static boolean isRetriableState(String state) {
        if (state == null || state.length() != 5) {
            return false;
        }
        String type = state.substring(0, 2);
        return type.equals("08")     // connection exception
                || type.equals("40") // transaction rollback: serialization failure, deadlock
                || RETRIABLE_STATES.contains(state);
    }

    private static SQLException findSqlException(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql) {
                return sql;
            }
        }
        return null;
    }
}
