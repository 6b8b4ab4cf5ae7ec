package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.postgres.WalHarvest;
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

/**
 * The benchmark database on Postgres: {@link PostgresStore}, filled with {@code COPY}; and the same outbox with the
 * WAL harvest ({@link #walStore()}), filled with {@code <table>_emit} in the server. Thread-safe.
 */
final class PostgresDatabase implements BenchDatabase {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private final JdbcServer server;
    private final String jdbcUrl;
    private final HikariDataSource pool;
    private final PostgresStore store;
    private final PostgresStore pollingStore;
    private final PostgresStore walStore;
    private final java.util.Map<Integer, PostgresStore> shardedStores = new java.util.concurrent.ConcurrentHashMap<>();

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
        this.pollingStore = PostgresStore.builder(pool).table(BenchEnvironment.TABLE).commitNotifications(false)
                .build();
        this.walStore = PostgresStore.builder(pool).table(BenchEnvironment.TABLE)
                .walHarvest(WalHarvest.builder(jdbcUrl).user(server.username()).password(server.password()).build())
                .build();
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

    /** The same outbox with commit notifications off: its leader polls. */
    @Override
    public PostgresStore pollingStore() {
        return pollingStore;
    }

    /** The same outbox harvested from the write-ahead log: its slot exists only after {@link #resetWal()}. */
    @Override
    public PostgresStore walStore() {
        return walStore;
    }

    /** Also drops the WAL harvest's slot, if any: it would hold back the WAL the table scenarios write. */
    @Override
    public void reset() {
        walStore.harvestStopped();
        walStore.dropSlot();
        BenchEnvironment.execute(pool, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable() + ", "
                + store.leaderTable());
        store.createSchema();
    }

    @Override
    public PostgresStore shardedStore(int shards) {
        return shardedStores.computeIfAbsent(shards, n -> PostgresStore.builder(pool).table(BenchEnvironment.TABLE)
                .shards(n).build());
    }

    @Override
    public void resetSharded(int shards) {
        walStore.harvestStopped();
        walStore.dropSlot();
        BenchEnvironment.execute(pool, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable() + ", "
                + store.leaderTable());
        shardedStore(shards).createSchema();
    }

    /** {@link #reset()}, then the WAL harvest's schema: its functions, and a new slot and publication. */
    @Override
    public void resetWal() {
        reset();
        walStore.createSchema();
    }

    /**
     * Emits {@code rows} messages into the WAL (after {@link #resetWal()}), in transactions of {@value #WAL_FILL_TX}:
     * {@code SELECT <table>_emit(...) FROM generate_series(...)} in the server, random keys out of {@code keys},
     * values of {@code valueBytes} bytes (md5 hashes of the row number, random enough for Kafka), no headers.
     */
    @Override
    public void fillWal(String topic, int rows, int keys, int valueBytes, long seed) {
        String emit = BenchEnvironment.TABLE + "_emit";
        String sql = "SELECT count(" + emit + "(?, 'key-' || floor(random() * ?)::int,"
                + " substring(decode(repeat(md5(i::text), ?), 'hex') FROM 1 FOR ?)))"
                + " FROM generate_series(?, ?) AS i";
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(true);
            try (Statement s = c.createStatement()) {
                s.execute("SELECT setseed(" + (seed % 1000) / 1000.0 + ")");
            }
            try (var s = c.prepareStatement(sql)) {
                for (int from = 1; from <= rows; from += WAL_FILL_TX) {
                    s.setString(1, topic);
                    s.setInt(2, keys);
                    s.setInt(3, valueBytes / 16 + 1);
                    s.setInt(4, valueBytes);
                    s.setInt(5, from);
                    s.setInt(6, Math.min(rows, from + WAL_FILL_TX - 1));
                    s.executeQuery().close();
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("emitting " + rows + " WAL messages failed: " + e.getMessage(), e);
        }
    }

    private static final int WAL_FILL_TX = 1_000;

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
        walStore.harvestStopped();
        walStore.dropSlot();
        pool.close();
    }
}
