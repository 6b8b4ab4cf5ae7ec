package dev.outbox.store.mysql;

import dev.outbox.spi.StoreException;
import dev.outbox.store.sql.SqlErrors;
import org.junit.jupiter.api.Test;

import java.io.EOFException;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLSyntaxErrorException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransactionRollbackException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which failures are retriable. The real servers produce most of them in the other tests (lock wait timeouts,
 * killed connections, query timeouts, missing tables); this covers the codes a test cannot easily provoke.
 */
class MySqlDialectTest {
    private static final SqlErrors errors = MySqlDialect.ERRORS;


    @Test
    void deadlocksLockWaitsTimeoutsAndLostConnectionsAreRetriable() {
        assertThat(errors.isRetriable(new SQLException("Deadlock found", "40001", 1213))).isTrue();
        assertThat(errors.isRetriable(new SQLException("Lock wait timeout exceeded", "HY000", 1205))).isTrue();
        assertThat(errors.isRetriable(new SQLTransactionRollbackException("rollback"))).isTrue();
        assertThat(errors.isRetriable(new SQLTimeoutException("cancelled"))).isTrue();
        assertThat(errors.isRetriable(new SQLException("interrupted", "70100", 1317))).isTrue();
        assertThat(errors.isRetriable(new SQLException("max_statement_time exceeded", "70100", 1969))).isTrue();
        assertThat(errors.isRetriable(new SQLException("killed", "70100", 1927))).isTrue();
        assertThat(errors.isRetriable(new SQLException("shutdown", "08S01", 1053))).isTrue();
        assertThat(errors.isRetriable(new SQLException("read only", "HY000", 1290))).isTrue();
        assertThat(errors.isRetriable(new SQLException("Disk full", "HY000", 1021))).isTrue();
        assertThat(errors.isRetriable(new SQLException("The table 'outbox' is full", "HY000", 1114))).isTrue();
        assertThat(errors.isRetriable(new SQLNonTransientConnectionException("closed", "08003"))).isTrue();
        assertThat(errors.isRetriable(new IllegalStateException("wrapped",
                new SQLException("gone", "HY000", 2013)))).isTrue();
        assertThat(errors.isRetriable(new RuntimeException(new EOFException("eof")))).isTrue();
    }

    @Test
    void schemaPermissionAndDataErrorsAreNot() {
        assertThat(errors.isRetriable(new SQLSyntaxErrorException("no such table", "42S02", 1146))).isFalse();
        assertThat(errors.isRetriable(new SQLException("denied", "42000", 1142))).isFalse();
        assertThat(errors.isRetriable(new SQLException("too long", "22001", 1406))).isFalse();
        assertThat(errors.isRetriable(new SQLException("binlog format", "HY000", 1665))).isFalse();
    }

    @Test
    void theMessageNamesTheOperationTheCodeAndTheVerdict() {
        StoreException e = errors.translate("purging 3 rows of `outbox`",
                new SQLException("Deadlock found when trying to get lock", "40001", 1213));

        assertThat(e.isRetriable()).isTrue();
        assertThat(e).hasMessage("purging 3 rows of `outbox` failed (error 1213, SQLSTATE 40001): Deadlock found"
                + " when trying to get lock; retriable");
        assertThat(errors.translate("again", e)).isSameAs(e);
    }
}
