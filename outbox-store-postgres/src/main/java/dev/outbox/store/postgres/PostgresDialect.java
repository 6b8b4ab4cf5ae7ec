package dev.outbox.store.postgres;

import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.IdBinding;
import dev.outbox.store.sql.SqlDialect;
import dev.outbox.store.sql.SqlErrors;

import java.util.Set;

/** What Postgres differs in, as data. Stateless and thread-safe. */
final class PostgresDialect {
    /** Which failures a retry may cure; messages name the SQLSTATE. */
    static final SqlErrors ERRORS = new SqlErrors(Set.of(
            "08",    // connection exception
            "40",    // transaction rollback: serialization failure, deadlock
            "57014", // query_canceled: the statement timeout expired
            "57P01", // admin_shutdown: the backend was terminated (pg_terminate_backend, server shutting down)
            "57P02", // crash_shutdown
            "57P03", // cannot_connect_now: the server is starting up
            "57P05", // idle_session_timeout
            "55P03", // lock_not_available: lock_timeout expired
            "25006", // read_only_sql_transaction: connected to a standby, e.g. during a fail-over
            "25P03", // idle_in_transaction_session_timeout
            "53000", // insufficient_resources
            "53100", // disk_full: retried until an operator frees space (an outage of every key, not a bad record)
            "53200", // out_of_memory
            "53300", // too_many_connections
            "58030"  // io_error on the server
    ), Set.of(), false);

    /**
     * Postgres truncates identifiers to 63 bytes (NAMEDATALEN - 1) and quotes them with double quotes; keys have no
     * limit beyond Postgres' own by default. A batch binds its ids as one {@code bigint[]} (and its values as a
     * parallel {@code text[]}): one statement per call, whatever its size. Statements are bounded by
     * {@code statement_timeout}, set by each transaction's first statement, not by JDBC query timeouts.
     */
    static final SqlDialect DIALECT = new SqlDialect(new SqlTableNames.Dialect("Postgres", 63, '"'),
            "dev/outbox/store/postgres/schema.sql", ERRORS, Integer.MAX_VALUE, IdBinding.arrays("bigint", "text"),
            PostgresColumns.INSTANCE, false);

    private PostgresDialect() {
    }
}
