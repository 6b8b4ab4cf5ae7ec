package dev.outbox.store.mysql;

import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.IdBinding;
import dev.outbox.store.sql.SqlDialect;
import dev.outbox.store.sql.SqlErrors;

import java.util.Set;

/**
 * What MySQL and MariaDB differ in, as data. Retriable: a lost or refused connection, a timeout, a deadlock or lock
 * wait timeout, a server shutting down or read-only during a fail-over, a full disk or table. Stateless and thread-safe.
 */
final class MySqlDialect {
    /** Which failures a retry may cure; messages name the error code and the SQLSTATE. */
    static final SqlErrors ERRORS = new SqlErrors(Set.of(
            "08",    // connection exception
            "40",    // transaction rollback: deadlock
            "70100"  // query interrupted
    ), Set.of(
            1205, // ER_LOCK_WAIT_TIMEOUT
            1213, // ER_LOCK_DEADLOCK
            1614, // ER_XA_RBDEADLOCK
            1317, // ER_QUERY_INTERRUPTED: KILL QUERY, e.g. by the driver's query timeout
            3024, // ER_QUERY_TIMEOUT (MySQL max_execution_time)
            1969, // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
            3572, // ER_LOCK_NOWAIT
            1040, // ER_CON_COUNT_ERROR: too many connections
            1021, // ER_DISK_FULL: retried until an operator frees space (an outage of every key, not a bad record)
            1114, // ER_RECORD_FILE_FULL: "The table is full", its tablespace cannot grow
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
    ), true);

    /** The default and the schema's longest key, in code points: {@code VARCHAR(1024)}. */
    static final int DEFAULT_MAX_KEY_LENGTH = 1024;

    /** The most ids bound into one {@code IN (...)} list; larger batches take several statements. */
    static final int MAX_IDS_PER_STATEMENT = 1_000;

    /**
     * MySQL and MariaDB limit table and database names to 64 characters and quote them with backticks. A batch binds
     * its ids as {@code IN} lists of at most {@value #MAX_IDS_PER_STATEMENT} parameters, every statement of a call in
     * its transaction; every statement carries the statement timeout as a JDBC query timeout (Connector/J then
     * cancels it with {@code KILL QUERY}, which also ends a lock wait).
     */
    static final SqlDialect DIALECT = new SqlDialect(new SqlTableNames.Dialect("MySQL", 64, '`'),
            "dev/outbox/store/mysql/schema.sql", ERRORS, DEFAULT_MAX_KEY_LENGTH,
            IdBinding.lists(MAX_IDS_PER_STATEMENT), MySqlColumns.INSTANCE, true);

    private MySqlDialect() {
    }
}
