package dev.outbox.testservers;

import com.zaxxer.hikari.HikariConfig;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Plain SQL for tests against the servers: run a statement, read one value, configure a small pool. Every failure
 * is an {@link IllegalStateException} naming the statement. Stateless and thread-safe.
 */
public final class Jdbc {
    private Jdbc() {
    }

    /** Runs {@code sql} on a new connection of {@code dataSource}. */
    public static void execute(DataSource dataSource, String sql) {
        query(dataSource, sql, null);
    }

    /** The first column of the first row of {@code sql}, as a long. */
    public static long queryLong(DataSource dataSource, String sql) {
        return Long.parseLong(query(dataSource, sql, "a number"));
    }

    /** The first column of the first row of {@code sql}, as a string. */
    public static String queryString(DataSource dataSource, String sql) {
        return query(dataSource, sql, "a value");
    }

    /**
     * The settings of a small test pool: at most {@code size} connections, none kept idle, 10 s to get one, named
     * {@code name} (in thread names and logs).
     */
    public static HikariConfig poolConfig(String url, String user, String password, int size, String name) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(10_000);
        config.setPoolName(name);
        return config;
    }

    /** Runs {@code sql}; returns the first column of its first row if {@code expected} names what it must be. */
    private static String query(DataSource dataSource, String sql, String expected) {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            boolean rows = s.execute(sql);
            if (expected == null) {
                return null;
            }
            if (!rows) {
                throw new IllegalStateException("no rows from " + sql);
            }
            try (ResultSet rs = s.getResultSet()) {
                if (!rs.next()) {
                    throw new IllegalStateException("no row from " + sql);
                }
                return rs.getString(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("failed: " + sql + ": " + e.getMessage(), e);
        }
    }
}
