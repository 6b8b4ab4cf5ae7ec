package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/** Shared helpers for the Postgres store's tests: databases, pools and raw SQL. */
final class PostgresTestSupport {
    private static final AtomicInteger POOLS = new AtomicInteger();

    private PostgresTestSupport() {
    }

    static JdbcServer server() {
        return TestServers.postgres();
    }

    /** A fresh, empty database named {@code name}; returns its JDBC URL. */
    static String database(String name) {
        return server().createDatabase(name);
    }

    /**
     * A small connection pool on {@code url} whose connections carry {@code applicationName}, so that a test can
     * kill them with {@link JdbcServer#killConnections(String)}.
     */
    static HikariDataSource pool(String url, String applicationName, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "ApplicationName=" + applicationName);
        config.setUsername(server().username());
        config.setPassword(server().password());
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(10_000);
        config.setPoolName("pool-" + applicationName + "-" + POOLS.incrementAndGet());
        return new HikariDataSource(config);
    }

    /** A non-pooling admin data source on {@code url}. */
    static DataSource admin(String url) {
        return server().dataSource(url);
    }

    /** Runs {@code sql} (one or more statements) on a new admin connection. */
    static void execute(DataSource dataSource, String sql) {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    /** The first column of the first row of {@code sql}, as a long. */
    static long queryLong(DataSource dataSource, String sql) {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            if (!rs.next()) {
                throw new IllegalStateException("no row from " + sql);
            }
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException("failed: " + sql + ": " + e.getMessage(), e);
        }
    }
}
