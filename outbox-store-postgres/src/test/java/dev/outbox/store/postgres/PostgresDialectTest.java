package dev.outbox.store.postgres;

import dev.outbox.spi.StoreException;
import dev.outbox.store.sql.SqlErrors;
import org.jdbi.v3.core.ConnectionException;
import org.junit.jupiter.api.Test;

import java.io.EOFException;
import java.sql.BatchUpdateException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;

import static org.assertj.core.api.Assertions.assertThat;

/** Which driver failures are worth retrying. */
class PostgresDialectTest {
    private static final SqlErrors errors = PostgresDialect.ERRORS;


    private static boolean retriable(String state) {
        return errors.translate("op", new SQLException("boom", state)).isRetriable();
    }

    @Test
    void connectionTimeoutAndConcurrencyFailuresAreRetriable() {
        for (String state : new String[]{"08000", "08003", "08006", "08001", "40001", "40P01", "57P01", "57P02",
                "57P03", "57014", "55P03", "25006", "53000", "53100", "53200", "53300"}) {
            assertThat(retriable(state)).as(state).isTrue();
        }
    }

    @Test
    void errorsThatNeedAHumanAreNotRetriable() {
        for (String state : new String[]{"42P01", "42501", "23505", "23502", "22021", "53400", "XX000", null, ""}) {
            assertThat(retriable(state)).as(String.valueOf(state)).isFalse();
        }
    }

    @Test
    void theCauseChainAndBatchExceptionsAreSearched() {
        SQLException batch = new BatchUpdateException("Batch entry 3 was aborted", "22001", new int[0]);
        batch.setNextException(new SQLException("terminating connection", "57P01"));
        assertThat(errors.isRetriable(batch)).isTrue();
        assertThat(errors.isRetriable(new ConnectionException(new SQLTransientConnectionException("pool"))))
                .isTrue();
        assertThat(errors.isRetriable(new RuntimeException(new EOFException("socket closed")))).isTrue();
        assertThat(errors.isRetriable(new IllegalStateException("mapping"))).isFalse();
    }

    @Test
    void theMessageNamesTheOperationTheStateAndTheDriversMessage() {
        StoreException e = errors.translate("purging 3 rows of \"outbox\"",
                new SQLException("relation \"outbox\" does not exist", "42P01"));

        assertThat(e).hasMessage("purging 3 rows of \"outbox\" failed (SQLSTATE 42P01): relation \"outbox\" does"
                + " not exist; not retriable");
        assertThat(e.getCause()).isInstanceOf(SQLException.class);
    }
}
