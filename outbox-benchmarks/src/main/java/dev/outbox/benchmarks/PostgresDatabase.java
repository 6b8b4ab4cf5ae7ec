package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;

/** The benchmark database on Postgres: {@link PostgresStore}, filled with {@code COPY}. Thread-safe. */
final class PostgresDatabase implements BenchDatabase {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private final JdbcServer server;
    private final String jdbcUrl;
    private final HikariDataSource pool;
    private final PostgresStore store;

    /**
     * @param synchronousCommit the database's {@code synchronous_commit}, or "server" to keep the server's
     */
    PostgresDatabase(JdbcServer server, String synchronousCommit, int poolSize) {
        this.server = server;
        this.jdbcUrl = server.createDatabase(BenchEnvironment.DATABASE);
        if (!synchronousCommit.equals("server")) {
            BenchEnvironment.execute(server.dataSource(jdbcUrl), "ALTER DATABASE " + BenchEnvironment.DATABASE
                    + " SET synchronous_commit = " + synchronousCommit);
        }
        this.pool = BenchEnvironment.pool(jdbcUrl, server.username(), server.password(), poolSize);
        this.store = PostgresStore.builder(pool).table(BenchEnvironment.TABLE).build();
    }

    @Override
    public String name() {
        return "postgres";
    }

    @Override
    public JdbcServer server() {
        return server;
    }

    @Override
    public String jdbcUrl() {
        return jdbcUrl;
    }

    @Override
    public DataSource pool() {
        return pool;
    }

    @Override
    public PostgresStore store() {
        return store;
    }

    @Override
    public void reset() {
        BenchEnvironment.execute(pool, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable());
        store.createSchema();
    }

    @Override
    public void fill(String topic, int rows, RowSource source) {
        dev.outbox.Header header = source.header();
        String headerColumns = "";
        if (header != null) {
            String v = header.valueAsString();
            if (!header.name().matches("[A-Za-z0-9_.-]+") || v == null || !v.matches("[A-Za-z0-9_.:/=+-]+")) {
                throw new IllegalArgumentException("header " + header + " cannot be written by COPY as it is");
            }
            headerColumns = "\t{" + header.name() + "}\t{" + v + "}"; // bytea escape input: ASCII as is
        }
        String sql = "COPY " + store.table() + " (topic, key, value" + (header == null ? ""
                : ", header_names, header_values") + ") FROM STDIN";
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(true);
            CopyIn in = c.unwrap(PGConnection.class).getCopyAPI().copyIn(sql);
            try {
                StringBuilder line = new StringBuilder(64 * 1024);
                for (int i = 0; i < rows; i++) {
                    line.append(topic).append('\t').append(source.nextKey()).append("\t\\\\x");
                    for (byte b : source.nextValue()) {
                        line.append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
                    }
                    line.append(headerColumns).append('\n');
                    if (line.length() > 60_000 || i == rows - 1) {
                        byte[] bytes = line.toString().getBytes(StandardCharsets.UTF_8);
                        in.writeToCopy(bytes, 0, bytes.length);
                        line.setLength(0);
                    }
                }
                in.endCopy();
            } finally {
                if (in.isActive()) {
                    in.cancelCopy();
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("COPY of " + rows + " rows failed: " + e.getMessage(), e);
        }
        BenchEnvironment.execute(pool, "VACUUM ANALYZE " + store.table());
    }

    @Override
    public long count() {
        return BenchEnvironment.queryLong(pool, "SELECT count(*) FROM " + store.table());
    }

    @Override
    public Map<String, String> settings() {
        Map<String, String> settings = new LinkedHashMap<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            for (String name : new String[] {"synchronous_commit", "fsync", "wal_level", "shared_buffers",
                    "max_wal_size", "autovacuum"}) {
                try (ResultSet rs = s.executeQuery("SHOW " + name)) {
                    rs.next();
                    settings.put(name, rs.getString(1));
                }
            }
        } catch (SQLException e) {
            settings.put("error", e.getMessage());
        }
        return settings;
    }

    @Override
    public String password() {
        return server.password();
    }

    @Override
    public Map<String, String> childProperties() {
        return Map.of("bench.database", name(), "bench.jdbc.url", jdbcUrl, "bench.jdbc.user", server.username(),
                "bench.table", BenchEnvironment.TABLE);
    }

    @Override
    public void close() {
        pool.close();
    }
}
