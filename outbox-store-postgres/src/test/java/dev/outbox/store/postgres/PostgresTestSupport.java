package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import javax.sql.DataSource;
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
        return new HikariDataSource(Jdbc.poolConfig(url + (url.contains("?") ? "&" : "?") + "ApplicationName="
                + applicationName, server().username(), server().password(), size,
                "pool-" + applicationName + "-" + POOLS.incrementAndGet()));
    }

    /**
     * A WAL harvest of the database at {@code url} as the test server's user, its replication connections named
     * {@code applicationName}; the caller sets the rest.
     */
    static WalHarvest.Builder walHarvest(String url, String applicationName) {
        return WalHarvest.builder(url).user(server().username()).password(server().password())
                .property("ApplicationName", applicationName);
    }

    /** A non-pooling admin data source on {@code url}. */
    static DataSource admin(String url) {
        return server().dataSource(url);
    }

    /** Runs {@code sql} (one or more statements) on a new admin connection. */
    static void execute(DataSource dataSource, String sql) {
        Jdbc.execute(dataSource, sql);
    }

    /** The first column of the first row of {@code sql}, as a long. */
    static long queryLong(DataSource dataSource, String sql) {
        return Jdbc.queryLong(dataSource, sql);
    }
}
