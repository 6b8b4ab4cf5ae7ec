package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.testservers.JdbcServer;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The benchmark database on MySQL 8 or MariaDB: {@link MySqlStore}, filled with multi-row {@code INSERT}s
 * (Connector/J's {@code rewriteBatchedStatements}). Thread-safe.
 */
final class MySqlDatabase implements BenchDatabase {
    private static final int ROWS_PER_STATEMENT = 1_000;
    private static final int ROWS_PER_TRANSACTION = 20_000;

    private final String name;
    private final JdbcServer server;
    private final String jdbcUrl;
    private final HikariDataSource pool;
    private final MySqlStore store;
    private final java.util.Map<Integer, MySqlStore> shardedStores;
    private final List<String> settingNames = new java.util.ArrayList<>();

    /**
     * @param synchronousCommit on: {@code innodb_flush_log_at_trx_commit=1} (flush at every commit, the
     *                          default of a MySQL server); off: 2 (write at commit, flush once a second);
     *                          server: keep the server's
     */
    MySqlDatabase(String name, JdbcServer server, String synchronousCommit, int poolSize, String jdbcOptions,
                  List<String> serverSettings) {
        this.name = name;
        this.server = server;
        this.jdbcUrl = server.createDatabase(BenchEnvironment.DATABASE);
        if (!synchronousCommit.equals("server")) {
            BenchEnvironment.execute(server.dataSource(jdbcUrl), "SET GLOBAL innodb_flush_log_at_trx_commit = "
                    + (synchronousCommit.equals("off") ? 2 : 1));
        }
        for (String setting : serverSettings) {
            int eq = setting.indexOf('=');
            if (eq < 1 || !setting.substring(0, eq).matches("[a-z_]+")) {
                throw new IllegalArgumentException("--server-setting must be name=value: " + setting);
            }
            this.settingNames.add(setting.substring(0, eq));
            BenchEnvironment.execute(server.dataSource(jdbcUrl), "SET GLOBAL " + setting.substring(0, eq) + " = "
                    + setting.substring(eq + 1));
        }
        // Counted by counters(); off by default in InnoDB's metrics table.
        BenchEnvironment.execute(server.dataSource(jdbcUrl),
                "SET GLOBAL innodb_monitor_enable = 'buffer_flush_sync_waits'");
        String url = jdbcUrl + (jdbcUrl.contains("?") ? "&" : "?") + "rewriteBatchedStatements=true"
                + (jdbcOptions.isEmpty() ? "" : "&" + jdbcOptions);
        this.pool = BenchEnvironment.pool(url, server.username(), server.password(), poolSize);
        this.store = MySqlStore.builder(pool).table(BenchEnvironment.TABLE).build();
        this.shardedStores = new java.util.concurrent.ConcurrentHashMap<>();
    }

    @Override
    public String name() {
        return name;
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
    public MySqlStore store() {
        return store;
    }

    @Override
    public void reset() {
        BenchEnvironment.execute(pool, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable() + ", "
                + store.leaderTable());
        store.createSchema();
    }

    @Override
    public MySqlStore shardedStore(int shards) {
        return shardedStores.computeIfAbsent(shards, n -> MySqlStore.builder(pool).table(BenchEnvironment.TABLE)
                .shards(n).build());
    }

    @Override
    public void resetSharded(int shards) {
        BenchEnvironment.execute(pool, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable() + ", "
                + store.leaderTable());
        shardedStore(shards).createSchema();
    }

    @Override
    public void fill(String topic, int rows, RowSource source) {
        dev.outbox.Header header = source.header();
        String headers = header == null ? null : "[{\"name\": \"" + header.name() + "\", \"value\": \""
                + java.util.Base64.getEncoder().encodeToString(header.value()) + "\"}]";
        String sql = "INSERT INTO " + store.table() + " (topic, `key`, value, headers) VALUES (?, ?, ?, ?)";
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            c.setAutoCommit(false);
            for (int i = 1; i <= rows; i++) {
                s.setString(1, topic);
                s.setString(2, source.nextKey());
                s.setBytes(3, source.nextValue().clone());
                s.setString(4, headers);
                s.addBatch();
                if (i % ROWS_PER_STATEMENT == 0 || i == rows) {
                    s.executeBatch();
                }
                if (i % ROWS_PER_TRANSACTION == 0 || i == rows) {
                    c.commit();
                }
            }
            c.setAutoCommit(true);
        } catch (SQLException e) {
            throw new IllegalStateException("inserting " + rows + " rows failed: " + e.getMessage(), e);
        }
        BenchEnvironment.execute(pool, "ANALYZE TABLE " + store.table());
    }

    @Override
    public long count() {
        return BenchEnvironment.queryLong(pool, "SELECT count(*) FROM " + store.table());
    }

    @Override
    public Map<String, String> settings() {
        Map<String, String> settings = new LinkedHashMap<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW GLOBAL VARIABLES WHERE Variable_name IN"
                     + " ('innodb_flush_log_at_trx_commit', 'sync_binlog', 'log_bin', 'innodb_buffer_pool_size',"
                     + " 'innodb_redo_log_capacity', 'innodb_log_file_size', 'transaction_isolation'"
                     + settingNames.stream().map(n -> ", '" + n + "'").collect(java.util.stream.Collectors.joining())
                     + ")")) {
            while (rs.next()) {
                settings.put(rs.getString(1), rs.getString(2));
            }
        } catch (SQLException e) {
            settings.put("error", e.getMessage());
        }
        return settings;
    }

    /**
     * InnoDB's counters of what a drain waits for: row lock waits and their time (ms), waits for the redo log buffer,
     * for a free page, for a synchronous flush (the redo log full), and the redo log's fsyncs.
     */
    @Override
    public Map<String, Long> counters() {
        Map<String, Long> counters = new LinkedHashMap<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_waits',"
                    + " 'Innodb_row_lock_time', 'Innodb_log_waits', 'Innodb_buffer_pool_wait_free',"
                    + " 'Innodb_os_log_fsyncs')")) {
                while (rs.next()) {
                    counters.put(rs.getString(1), rs.getLong(2));
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT name, count FROM information_schema.INNODB_METRICS"
                    + " WHERE name = 'buffer_flush_sync_waits'")) {
                while (rs.next()) {
                    counters.put(rs.getString(1), rs.getLong(2));
                }
            } catch (SQLException e) {
                // MariaDB may not have it
            }
        } catch (SQLException e) {
            return Map.of();
        }
        return counters;
    }

    @Override
    public String password() {
        return server.password();
    }

    @Override
    public Map<String, String> childProperties() {
        return Map.of("bench.database", name, "bench.jdbc.url", jdbcUrl, "bench.jdbc.user", server.username(),
                "bench.table", BenchEnvironment.TABLE);
    }

    @Override
    public void close() {
        pool.close();
    }
}
