package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import javax.sql.DataSource;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Shared helpers for the MySQL store's tests, for either server kind: databases, users, pools and raw SQL.
 * Stateless apart from a counter; thread-safe.
 */
final class MySqlTestSupport {
    static final String USER_PASSWORD = "outbox-test";
    private static final AtomicInteger POOLS = new AtomicInteger();

    private MySqlTestSupport() {
    }

    static JdbcServer server(JdbcServer.Kind kind) {
        return TestServers.jdbc(kind);
    }

    /** A fresh, empty database named {@code name}; returns its JDBC URL. */
    static String database(JdbcServer.Kind kind, String name) {
        return server(kind).createDatabase(name);
    }

    /**
     * A small connection pool on {@code url} as the database user {@code user} (created if needed), so that a test
     * can kill its connections with {@link JdbcServer#killConnections(String)}.
     */
    static HikariDataSource pool(JdbcServer.Kind kind, String url, String user, int size) {
        return pool(kind, url, user, size, config -> {
        });
    }

    /** {@link #pool(JdbcServer.Kind, String, String, int)}, with more settings by {@code customizer}. */
    static HikariDataSource pool(JdbcServer.Kind kind, String url, String user, int size,
                                 Consumer<HikariConfig> customizer) {
        server(kind).createUser(user, USER_PASSWORD);
        HikariConfig config = Jdbc.poolConfig(url, user, USER_PASSWORD, size,
                "pool-" + user + "-" + POOLS.incrementAndGet());
        customizer.accept(config);
        return new HikariDataSource(config);
    }

    /** A non-pooling admin data source on {@code url}. */
    static DataSource admin(JdbcServer.Kind kind, String url) {
        return server(kind).dataSource(url);
    }

    /** Runs {@code sql} (one statement) on a new connection of {@code dataSource}. */
    static void execute(DataSource dataSource, String sql) {
        Jdbc.execute(dataSource, sql);
    }

    /** The first column of the first row of {@code sql}, as a long. */
    static long queryLong(DataSource dataSource, String sql) {
        return Jdbc.queryLong(dataSource, sql);
    }

    /** The first column of the first row of {@code sql}, as a string. */
    static String queryString(DataSource dataSource, String sql) {
        return Jdbc.queryString(dataSource, sql);
    }
}
