package dev.outbox.store.mysql;

import dev.outbox.spi.StoreException;

import java.io.IOException;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.Set;

/**
 * Translates driver and Jdbi failures into {@link StoreException}s and decides which are retriable: a lost or
 * refused connection, a timeout, a deadlock or lock wait timeout, a server shutting down or read-only during a
 * fail-over. Everything else (a missing table, a permission error, a bad value) is not. Stateless.
 */
final class MySqlErrors {
    /** MySQL and MariaDB error codes after which trying again may succeed. */
    private static final Set<Integer> RETRIABLE_CODES = Set.of(
            1205, // ER_LOCK_WAIT_TIMEOUT
            1213, // ER_LOCK_DEADLOCK
            1614, // ER_XA_RBDEADLOCK
            1317, // ER_QUERY_INTERRUPTED: KILL QUERY, e.g. by the driver's query timeout
            3024, // ER_QUERY_TIMEOUT (MySQL max_execution_time)
            1969, // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
            3572, // ER_LOCK_NOWAIT
            1040, // ER_CON_COUNT_ERROR: too many connections
            1053, // ER_SERVER_SHUTDOWN
            1077, // ER_NORMAL_SHUTDOWN
            1078, // ER_GOT_SIGNAL
            1079, // ER_SHUTDOWN_COMPLETE
            1152, // ER_ABORTING_CONNECTION
            1158, 1159, 1160, 1161, // network read/write errors and timeouts
            1927, // ER_CONNECTION_KILLED (MariaDB)
            4031, // ER_CLIENT_INTERACTION_TIMEOUT (MySQL): disconnected for inactivity
            1290, // ER_OPTION_PREVENTS_STATEMENT: --read-only, typically during a fail-over
            1792, // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
            1836, // ER_READ_ONLY_MODE
            2002, 2003, 2006, 2013, 2055 // client errors: cannot connect, server gone away, lost connection
    );

    private MySqlErrors() {
    }

    /**
     * Wraps {@code failure}, whose message goes into the new exception's message after {@code operation}.
     */
    static StoreException translate(String operation, Throwable failure) {
        if (failure instanceof StoreException store) {
            return store;
        }
        SQLException sql = findSqlException(failure);
        boolean retriable = isRetriable(failure);
        String code = sql == null ? "" : " (error " + sql.getErrorCode()
                + (sql.getSQLState() == null ? "" : ", SQLSTATE " + sql.getSQLState()) + ")";
        String message = operation + " failed" + code + ": "
                + (sql != null ? sql.getMessage() : failure.getMessage())
                + (retriable ? "; retriable" : "; not retriable");
        return new StoreException(message, failure, retriable);
    }

    /** Whether trying again later may succeed. */
    static boolean isRetriable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql) {
                for (SQLException e = sql; e != null; e = e.getNextException()) {
                    if (e instanceof SQLTransientException || e instanceof SQLRecoverableException
                            || e instanceof SQLNonTransientConnectionException) {
                        return true;
                    }
                    if (RETRIABLE_CODES.contains(e.getErrorCode()) || isRetriableState(e.getSQLState())) {
                        return true;
                    }
                }
            }
            if (t instanceof IOException) {
                return true;
            }
        }
        return false;
    }

    static boolean isRetriableState(String state) {
        if (state == null || state.length() != 5) {
            return false;
        }
        return state.startsWith("08")   // connection exception
                || state.startsWith("40") // transaction rollback: deadlock
                || state.equals("70100"); // query interrupted
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
