package dev.outbox.benchmarks;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;

/**
 * Measures the MySQL store's {@code headers} column two ways, on records with 10 headers of 32 bytes each: encoded
 * and decoded in the JVM with Jackson's streaming API (what {@link MySqlStore} does), or by the server's own JSON
 * functions ({@code JSON_ARRAY(JSON_OBJECT('name', ?, 'value', TO_BASE64(?)), ...)} to write, {@code JSON_TABLE}
 * with {@code FROM_BASE64} to read). Writes go through multi-row {@code INSERT}s of 100 rows, reads fetch 1,000
 * rows a query; each way runs the same number of records, alternately, several rounds. Not thread-safe.
 *
 * <pre>
 * ./bench.sh headers-codec [records per round, default 20000] [rounds, default 5] [mysql|mariadb]
 * </pre>
 */
public final class HeadersCodecBenchmark {
    private static final int HEADERS = 10;
    private static final int ROWS_PER_INSERT = 100;
    private static final int ROWS_PER_READ = 1_000;
    private static final JsonFactory JSON = new JsonFactory();

    private final HikariDataSource pool;
    private final MySqlStore store;
    private final List<OutboxMessage> batch = new ArrayList<>();

    private HeadersCodecBenchmark(HikariDataSource pool) {
        this.pool = pool;
        this.store = MySqlStore.builder(pool).table("headers_codec").build();
        Random random = new Random(42);
        for (int i = 0; i < ROWS_PER_INSERT; i++) {
            OutboxMessage.Builder message = OutboxMessage.builder("bench", "key-" + i).value(new byte[100]);
            for (int h = 0; h < HEADERS; h++) {
                byte[] value = new byte[32];
                random.nextBytes(value);
                message.header("header-" + h, value);
            }
            batch.add(message.build());
        }
    }

    /** Runs the measurement; see the class comment for the arguments. */
    public static void main(String[] args) throws Exception {
        int records = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        JdbcServer server = args.length > 2 && args[2].equals("mariadb") ? TestServers.mariadb() : TestServers.mysql();
        String url = server.createDatabase("outbox_headers_codec");
        try (HikariDataSource pool = BenchEnvironment.pool(url, server.username(), server.password(), 2)) {
            HeadersCodecBenchmark bench = new HeadersCodecBenchmark(pool);
            System.out.printf("%s %s, %,d records of %d headers per round, %d rounds; µs per record%n",
                    server.kind(), server.version(), records, HEADERS, rounds);
            System.out.printf("%-6s %14s %14s %14s %14s%n", "round", "write Jackson", "write SQL", "read Jackson",
                    "read SQL");
            for (int round = 0; round <= rounds; round++) {
                double[] micros = bench.round(records);
                System.out.printf("%-6s %14.1f %14.1f %14.1f %14.1f%n", round == 0 ? "warm" : round, micros[0],
                        micros[1], micros[2], micros[3]);
            }
        }
        System.exit(0); // the embedded server's threads would keep the JVM alive
    }

    /** One round: µs per record for write and read, Jackson and SQL. */
    private double[] round(int records) throws SQLException {
        store.createSchema();
        execute("TRUNCATE TABLE " + store.table());
        long t0 = System.nanoTime();
        for (int i = 0; i < records; i += ROWS_PER_INSERT) {
            try (Connection c = pool.getConnection()) {
                store.publisher().publish(c, batch);
            }
        }
        long t1 = System.nanoTime();
        long decodedJackson = readJackson();
        long t2 = System.nanoTime();
        execute("TRUNCATE TABLE " + store.table());
        long t3 = System.nanoTime();
        for (int i = 0; i < records; i += ROWS_PER_INSERT) {
            writeSql();
        }
        long t4 = System.nanoTime();
        long decodedSql = readSql();
        long t5 = System.nanoTime();
        if (decodedJackson != decodedSql || decodedSql != (long) records * HEADERS) {
            throw new IllegalStateException("decoded " + decodedJackson + " and " + decodedSql + " headers, expected "
                    + (long) records * HEADERS);
        }
        double n = records * 1_000.0;
        return new double[]{(t1 - t0) / n, (t4 - t3) / n, (t2 - t1) / n, (t5 - t4) / n};
    }

    private void writeSql() throws SQLException {
        StringBuilder row = new StringBuilder("(?, ?, ?, JSON_ARRAY(");
        for (int h = 0; h < HEADERS; h++) {
            row.append(h == 0 ? "" : ", ").append("JSON_OBJECT('name', ?, 'value', TO_BASE64(?))");
        }
        row.append("))");
        StringBuilder sql = new StringBuilder("INSERT INTO " + store.table() + " (topic, `key`, value, headers) VALUES ");
        for (int i = 0; i < batch.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append(row);
        }
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement(sql.toString())) {
            int p = 1;
            for (OutboxMessage m : batch) {
                s.setString(p++, m.topic());
                s.setString(p++, m.key());
                s.setBytes(p++, m.value());
                for (Header h : m.headers()) {
                    s.setString(p++, h.name());
                    s.setBytes(p++, h.value());
                }
            }
            s.executeUpdate();
        }
    }

    /** Reads every row's headers column and decodes it in the JVM; returns the number of headers. */
    private long readJackson() throws SQLException {
        long headers = 0;
        long after = 0;
        Base64.Decoder decoder = Base64.getDecoder();
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement(
                "SELECT id, headers FROM " + store.table() + " WHERE id > ? ORDER BY id LIMIT " + ROWS_PER_READ)) {
            for (int got = ROWS_PER_READ; got == ROWS_PER_READ; ) {
                s.setLong(1, after);
                got = 0;
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        after = rs.getLong(1);
                        got++;
                        List<Header> decoded = new ArrayList<>(HEADERS);
                        try (JsonParser json = JSON.createParser(rs.getString(2))) {
                            json.nextToken();
                            while (json.nextToken() == JsonToken.START_OBJECT) {
                                String name = null;
                                byte[] value = null;
                                for (String member = json.nextFieldName(); member != null;
                                     member = json.nextFieldName()) {
                                    json.nextToken();
                                    if (member.equals("name")) {
                                        name = json.getText();
                                    } else {
                                        value = decoder.decode(json.getText());
                                    }
                                }
                                decoded.add(Header.of(name, value));
                            }
                        } catch (java.io.IOException e) {
                            throw new IllegalStateException(e);
                        }
                        headers += decoded.size();
                    }
                }
            }
        }
        return headers;
    }

    /** Reads every row's headers decoded by the server (JSON_TABLE, FROM_BASE64); returns the number of headers. */
    private long readSql() throws SQLException {
        long headers = 0;
        long after = 0;
        String sql = "SELECT o.id, h.name, FROM_BASE64(h.value) FROM (SELECT id, headers FROM " + store.table()
                + " WHERE id > ? ORDER BY id LIMIT " + ROWS_PER_READ + ") o, JSON_TABLE(o.headers, '$[*]' COLUMNS ("
                + "n FOR ORDINALITY, name VARCHAR(255) PATH '$.name', value TEXT PATH '$.value')) h ORDER BY o.id, h.n";
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            for (long previous = -1; previous != after; ) {
                previous = after;
                s.setLong(1, after);
                try (ResultSet rs = s.executeQuery()) {
                    List<Header> decoded = new ArrayList<>(HEADERS);
                    long row = -1;
                    while (rs.next()) {
                        long id = rs.getLong(1);
                        if (id != row) {
                            headers += decoded.size();
                            decoded = new ArrayList<>(HEADERS);
                            row = id;
                        }
                        decoded.add(Header.of(rs.getString(2), rs.getBytes(3)));
                        after = id;
                    }
                    headers += decoded.size();
                }
            }
        }
        return headers;
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); var s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
