package dev.outbox.store.sql;

import dev.outbox.spi.StoreException;

import java.io.IOException;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Translates driver and Jdbi failures into {@link StoreException}s and decides which are retriable. One walk of the
 * cause chain (and of each {@link SQLException}'s chain of next exceptions) for every SQL store; what differs
 * between databases is data: which SQLSTATEs and vendor error codes a retry may cure, and whether messages name the
 * vendor code.
 *
 * <p>A failure is retriable if anything in its cause chain is an {@link IOException}, a
 * {@link SQLTransientException}, a {@link SQLRecoverableException} or a {@link SQLNonTransientConnectionException}
 * (a lost connection: the next one may work), or carries one of the retriable SQLSTATEs or codes. Everything else
 * (a missing table, a permission error, a bad value) is not.
 *
 * <p>Immutable and thread-safe.
 */
public final class SqlErrors {
    private final Set<String> retriableStates;
    private final Set<Integer> retriableCodes;
    private final boolean namesVendorCode;

    /**
     * Classifies failures with these SQLSTATEs and codes; the sets are copied.
     *
     * @param retriableStates SQLSTATEs a retry may cure: five characters for one state, two for a whole class
     *                        (such as {@code "08"}, connection exceptions)
     * @param retriableCodes  vendor error codes a retry may cure
     * @param namesVendorCode whether messages name the vendor error code besides the SQLSTATE (where the vendor's
     *                        codes are what its documentation and users go by, as in MySQL)
     * @throws NullPointerException     if a set is null or holds null
     * @throws IllegalArgumentException naming a SQLSTATE that is neither 2 nor 5 characters long
     */
    public SqlErrors(Set<String> retriableStates, Set<Integer> retriableCodes, boolean namesVendorCode) {
        for (String state : retriableStates) {
            if (state.length() != 2 && state.length() != 5) {
                throw new IllegalArgumentException("a retriable SQLSTATE must be a class (2 characters) or a state"
                        + " (5 characters): '" + state + "'");
            }
        }
        this.retriableStates = Set.copyOf(retriableStates);
        this.retriableCodes = Set.copyOf(retriableCodes);
        this.namesVendorCode = namesVendorCode;
    }

    /**
     * Wraps {@code failure} (returned as it is if it already is a {@link StoreException}); the message names
     * {@code operation}, the SQLSTATE (and the vendor code if so configured), the driver's message and whether a
     * retry may help.
     *
     * @param operation what failed, as messages name it ("marking up to 100 rows of outbox")
     * @param failure   the failure, from the driver, Jdbi or the store; not null
     * @return {@code failure} itself if it is a {@link StoreException}, else a new one with {@code failure} as its
     *         cause and {@link #isRetriable} as its retriability
     */
    public StoreException translate(String operation, Throwable failure) {
        if (failure instanceof StoreException store) {
            return store;
        }
        SQLException sql = null;
        for (Throwable t : causes(failure)) {
            if (t instanceof SQLException found) {
                sql = found;
                break;
            }
        }
        boolean retriable = isRetriable(failure);
        String detail = sql != null ? sql.getMessage() : failure.getMessage();
        if (sql != null && sql.getNextException() != null) {
            detail += " (" + sql.getNextException().getMessage() + ")";
        }
        String message = operation + " failed" + codes(sql) + ": " + detail
                + (retriable ? "; retriable" : "; not retriable");
        return new StoreException(message, failure, retriable);
    }

    /**
     * Whether trying again later may succeed.
     *
     * @param failure the failure; its whole cause chain is searched (stopping at a cycle)
     * @return true if anything in the chain is retriable by the rules of the class description
     */
    public boolean isRetriable(Throwable failure) {
        for (Throwable t : causes(failure)) {
            if (t instanceof IOException) {
                return true;
            }
            if (t instanceof SQLException sql) {
                for (SQLException e = sql; e != null; e = e.getNextException()) {
                    if (e instanceof SQLTransientException || e instanceof SQLRecoverableException
                            || e instanceof SQLNonTransientConnectionException
                            || retriableCodes.contains(e.getErrorCode()) || isRetriableState(e.getSQLState())) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * Whether {@code state} (null allowed) is one of the retriable SQLSTATEs or in one of their classes.
     *
     * @param state a SQLSTATE, or null
     * @return false for null or a state that is not five characters long
     */

    public boolean isRetriableState(String state) {
        if (state == null || state.length() != 5) {
            return false;
        }
        return retriableStates.contains(state) || retriableStates.contains(state.substring(0, 2));
    }

    private String codes(SQLException sql) {
        if (sql == null) {
            return "";
        }
        String state = sql.getSQLState();
        if (namesVendorCode) {
            return " (error " + sql.getErrorCode() + (state == null ? "" : ", SQLSTATE " + state) + ")";
        }
        return state == null ? "" : " (SQLSTATE " + state + ")";
    }

    /** {@code failure} and its causes, outermost first, stopping at a cycle. */
    private static List<Throwable> causes(Throwable failure) {
        List<Throwable> chain = new ArrayList<>();
        for (Throwable t = failure; t != null && !chain.contains(t); t = t.getCause()) {
            chain.add(t);
        }
        return chain;
    }
}
