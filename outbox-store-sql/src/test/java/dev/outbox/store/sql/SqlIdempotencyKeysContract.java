package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.Store;
import dev.outbox.testkit.IdempotencyKeysContract;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link IdempotencyKeysContract} for a SQL store ({@link SqlStore.Builder#idempotencyKeys}, {@link SqlIdempotency}),
 * and the builder's checks. A subclass starts the database and sets {@link #admin}, {@link #storePool} and
 * {@link #appPool} in a {@code @BeforeAll} method; each test has tables of its own.
 */
public abstract class SqlIdempotencyKeysContract extends IdempotencyKeysContract {
    private final AtomicInteger tables = new AtomicInteger();
    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    private final List<SqlStore> created = new ArrayList<>();
    /** A non-pooling connection source for raw SQL. */
    protected DataSource admin;
    /** The pool the store takes its connections from. */
    protected HikariDataSource storePool;
    /** The pool the application's transactions run on (at least 5 connections). */
    protected HikariDataSource appPool;

    /** @param builders a builder of the store under test on a data source */
    protected SqlIdempotencyKeysContract(Function<DataSource, SqlStore.Builder<?, ?>> builders) {
        this.builders = builders;
    }

    /** {@return the database's current time in SQL: {@code now()}, {@code NOW(6)}, {@code CURRENT_TIMESTAMP}} */
    protected abstract String now();

    @AfterEach
    final void dropTables() {
        for (SqlStore store : created) {
            Jdbc.execute(admin, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable() + ", "
                    + store.leaderTable() + ", " + SqlIdempotency.table(store.names));
        }
        created.clear();
    }

    @AfterAll
    final void closePools() {
        storePool.close();
        appPool.close();
    }

    @Override
    protected DataSource writers() {
        return appPool;
    }

    @Override
    protected Outbox outbox(Duration retention, boolean failOnDuplicate) {
        SqlStore.Builder<?, ?> builder = builders.apply(storePool).table("idem_" + tables.incrementAndGet());
        if (retention != null) {
            builder.idempotencyKeys(retention).onDuplicate(failOnDuplicate ? OnDuplicate.FAIL : OnDuplicate.SKIP);
        }
        SqlStore store = builder.build();
        created.add(store);
        Jdbc.execute(admin, "DROP TABLE IF EXISTS " + SqlIdempotency.table(store.names));
        store.createSchema();
        return new SqlOutbox(store);
    }

    /** The builder refuses a retention that is not positive, naming it. */
    @Test
    void theRetentionMustBePositive() {
        for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofSeconds(-1), null}) {
            assertThatThrownBy(() -> builders.apply(storePool).idempotencyKeys(bad))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(String.valueOf(bad));
        }
        assertThatThrownBy(() -> builders.apply(storePool).onDuplicate(null)).isInstanceOf(NullPointerException.class);
    }

    /** The idempotency table's name must fit the database's identifier limit: a longer table name is refused. */
    @Test
    void aTableNameWithNoRoomForTheIdempotencyTableIsRefused() {
        int max = builders.apply(storePool).dialect.tableNames().maxIdentifierLength()
                - SqlIdempotency.TABLE_SUFFIX.length();
        String tooLong = "t".repeat(max + 1);
        assertThatThrownBy(() -> builders.apply(storePool).table(tooLong).idempotencyKeys(Duration.ofDays(1)).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(tooLong + SqlIdempotency.TABLE_SUFFIX)
                .hasMessageContaining("idempotencyKeys");
        assertThat(builders.apply(storePool).table("t".repeat(max)).idempotencyKeys(Duration.ofDays(1)).build()
                .capability(dev.outbox.spi.IdempotencyKeys.class)).isPresent();
    }

    /** The store's DDL holds the table, and the statement a plain-SQL writer runs works with it. */
    @Test
    void theSchemaHasTheIdempotencyTable() {
        SqlStore store = ((SqlOutbox) outbox(Duration.ofHours(1), false)).store;
        assertThat(store.idempotencySchemaSql()).contains(SqlIdempotency.table(store.names))
                .contains("idempotency_key");
        assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + SqlIdempotency.table(store.names))).isZero();
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            tx.publish(List.of(OutboxMessage.builder("t", "k").value("v").idempotencyKey("x").build()));
            tx.commit();
        }
        assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + SqlIdempotency.table(store.names))).isEqualTo(1);
    }

    private final class SqlOutbox implements Outbox {
        private final SqlStore store;

        SqlOutbox(SqlStore store) {
            this.store = store;
        }

        @Override
        public Store store() {
            return store;
        }

        @Override
        public Publisher publisher() {
            return store.publisher();
        }

        @Override
        public List<String> values() {
            List<String> values = new ArrayList<>();
            try (Connection c = admin.getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT * FROM " + store.table() + " ORDER BY id")) {
                int value = rs.findColumn("value"); // a keyword in H2: quoted there
                while (rs.next()) {
                    values.add(new String(rs.getBytes(value), StandardCharsets.UTF_8));
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
            return values;
        }

        @Override
        public long entries() {
            return Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + SqlIdempotency.table(store.names));
        }

        @Override
        public Duration age(String idempotencyKey) {
            try (Connection c = admin.getConnection(); PreparedStatement s = c.prepareStatement("SELECT created_at, "
                    + now() + " FROM " + SqlIdempotency.table(store.names) + " WHERE idempotency_key = ?")) {
                s.setString(1, idempotencyKey);
                try (ResultSet rs = s.executeQuery()) {
                    return rs.next() ? Duration.between(rs.getTimestamp(1).toInstant(), rs.getTimestamp(2).toInstant())
                            : null;
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public boolean entriesTableExists() {
            try (Connection c = admin.getConnection(); Statement s = c.createStatement()) {
                s.executeQuery("SELECT COUNT(*) FROM " + SqlIdempotency.table(store.names)).close();
                return true;
            } catch (SQLException e) {
                return false;
            }
        }
    }
}
