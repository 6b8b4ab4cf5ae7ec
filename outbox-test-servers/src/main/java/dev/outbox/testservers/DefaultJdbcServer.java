package dev.outbox.testservers;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link JdbcServer} over any {@link JdbcBackend}: the SQL that differs between Postgres and MySQL/MariaDB is
 * here, as data chosen by {@link JdbcServer.Kind}. Thread-safe: life-cycle calls are serialised by a lock.
 */
final class DefaultJdbcServer implements JdbcServer {
    private static final Logger LOG = LoggerFactory.getLogger(DefaultJdbcServer.class);
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_]*");
    /** {@code jdbc:<sub>://<host:port>/<database>?<params>} — what the drivers of all three kinds accept. */
    private static final Pattern URL = Pattern.compile("(jdbc:[a-z]+://[^/?]+)/([^?]*)(\\?.*)?");

    private static final Duration KILL_TIMEOUT = Duration.ofSeconds(10);

    private final JdbcBackend backend;
    private final Object lock = new Object();
    private boolean running;
    private boolean paused;
    private String version;
    private String urlPrefix;
    private String urlParameters;

    private DefaultJdbcServer(JdbcBackend backend) {
        this.backend = backend;
    }

    /** Starts {@code backend} and logs what started and how long it took. */
    static DefaultJdbcServer start(JdbcBackend backend) {
        DefaultJdbcServer server = new DefaultJdbcServer(backend);
        long started = System.nanoTime();
        synchronized (server.lock) {
            server.startLocked();
        }
        String details = backend.describe();
        LOG.info("{} {} ({}) ready at {} in {} ms{}", displayName(backend.kind()), server.version,
                backend.mode().name().toLowerCase(java.util.Locale.ROOT), server.jdbcUrl(),
                (System.nanoTime() - started) / 1_000_000, details.isEmpty() ? "" : ", " + details);
        return server;
    }

    static String displayName(Kind kind) {
        switch (kind) {
            case POSTGRES:
                return "PostgreSQL";
            case MYSQL:
                return "MySQL";
            case MARIADB:
                return "MariaDB";
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    private void startLocked() {
        backend.start();
        running = true;
        if (version == null) {
            Matcher m = URL.matcher(backend.jdbcUrl());
            if (!m.matches()) {
                throw new IllegalStateException("cannot parse JDBC URL '" + backend.jdbcUrl()
                        + "': expected jdbc:<driver>://<host>:<port>/<database>[?<parameters>]");
            }
            urlPrefix = m.group(1);
            urlParameters = m.group(3) == null ? "" : m.group(3);
            version = queryVersion();
        }
    }

    private String queryVersion() {
        String sql = backend.kind() == Kind.POSTGRES ? "SHOW server_version" : "SELECT VERSION()";
        try (Connection c = adminConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            String v = rs.getString(1);
            // Postgres: "17.6 (Debian ...)"; MariaDB: "11.4.5-MariaDB"; MySQL: "8.0.31".
            int cut = v.indexOf(' ');
            v = cut > 0 ? v.substring(0, cut) : v;
            return v.endsWith("-MariaDB") ? v.substring(0, v.length() - "-MariaDB".length()) : v;
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read the version of " + backend.jdbcUrl() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Kind kind() {
        return backend.kind();
    }

    @Override
    public ServerMode mode() {
        return backend.mode();
    }

    @Override
    public String version() {
        return version;
    }

    @Override
    public String jdbcUrl() {
        return backend.jdbcUrl();
    }

    @Override
    public String username() {
        return backend.username();
    }

    @Override
    public String password() {
        return backend.password();
    }

    @Override
    public String createDatabase(String name) {
        checkName("database name", name, 63);
        List<String> statements = new ArrayList<>();
        if (kind() == Kind.POSTGRES) {
            statements.add("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            statements.add("CREATE DATABASE " + name);
        } else {
            killMySqlConnections("db", name);
            statements.add("DROP DATABASE IF EXISTS `" + name + "`");
            statements.add("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4");
        }
        execute("create database " + name, statements);
        return urlPrefix + "/" + name + urlParameters;
    }

    @Override
    public void createUser(String name, String password) {
        checkName("user name", name, 32);
        Objects.requireNonNull(password, "password");
        if (password.indexOf('\'') >= 0 || password.indexOf('\\') >= 0) {
            throw new IllegalArgumentException("password of user '" + name + "' must not contain quotes or backslashes");
        }
        List<String> statements = new ArrayList<>();
        if (kind() == Kind.POSTGRES) {
            statements.add("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + name + "') THEN "
                    + "CREATE ROLE " + name + "; END IF; END $$");
            statements.add("ALTER ROLE " + name + " WITH LOGIN SUPERUSER PASSWORD '" + password + "'");
        } else {
            String user = "'" + name + "'@'%'";
            statements.add("CREATE USER IF NOT EXISTS " + user + " IDENTIFIED BY '" + password + "'");
            statements.add("ALTER USER " + user + " IDENTIFIED BY '" + password + "'");
            statements.add("GRANT ALL PRIVILEGES ON *.* TO " + user + " WITH GRANT OPTION");
            if (kind() == Kind.MARIADB) {
                // ALL includes READ_ONLY ADMIN, which writes past read_only: a client is not an administrator.
                statements.add("REVOKE READ_ONLY ADMIN ON *.* FROM " + user);
            }
        }
        execute("create user " + name, statements);
    }

    @Override
    public int killConnections(String client) {
        Objects.requireNonNull(client, "client");
        if (client.equals(username())) {
            throw new IllegalArgumentException("will not kill the connections of the administrative user '"
                    + client + "': create a user for the client with createUser");
        }
        if (kind() != Kind.POSTGRES) {
            return killMySqlConnections("user", client);
        }
        // The timeout makes each call wait until the backend has really gone.
        String sql = "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, " + KILL_TIMEOUT.toMillis() + ")) "
                + "FROM pg_stat_activity WHERE (application_name = ? OR usename = ?) AND pid <> pg_backend_pid()";
        try (Connection c = adminConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, client);
            s.setString(2, client);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot kill the connections of '" + client + "' on " + jdbcUrl()
                    + ": " + e.getMessage(), e);
        }
    }

    /** Kills the MySQL/MariaDB connections whose process-list {@code column} is {@code value}. */
    private int killMySqlConnections(String column, String value) {
        try (Connection c = adminConnection()) {
            List<Long> ids = new ArrayList<>();
            // column null: every client session but this one (not the server's own threads).
            String where = column == null ? "command <> 'Daemon' AND user NOT IN ('system user', 'event_scheduler')"
                    : column + " = ?";
            try (PreparedStatement s = c.prepareStatement(
                    "SELECT id FROM information_schema.processlist WHERE " + where + " AND id <> CONNECTION_ID()")) {
                if (column != null) {
                    s.setString(1, value);
                }
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        ids.add(rs.getLong(1));
                    }
                }
            }
            int killed = 0;
            try (Statement s = c.createStatement()) {
                for (long id : ids) {
                    try {
                        s.execute("KILL " + id);
                        killed++;
                    } catch (SQLException e) {
                        // ER_NO_SUCH_THREAD: the connection closed by itself meanwhile.
                        if (e.getErrorCode() != 1094) {
                            throw e;
                        }
                    }
                }
            }
            awaitGone(c, ids);
            return killed;
        } catch (SQLException e) {
            throw new IllegalStateException("cannot kill the connections with " + column + " '" + value + "' on "
                    + jdbcUrl() + ": " + e.getMessage(), e);
        }
    }

    /** Waits until the killed MySQL/MariaDB connections have left the process list, so their next use fails. */
    private void awaitGone(Connection c, List<Long> ids) throws SQLException {
        if (ids.isEmpty()) {
            return;
        }
        StringBuilder sql = new StringBuilder("SELECT count(*) FROM information_schema.processlist WHERE id IN (");
        for (int i = 0; i < ids.size(); i++) {
            sql.append(i == 0 ? "" : ",").append(ids.get(i));
        }
        sql.append(')');
        long deadline = System.nanoTime() + KILL_TIMEOUT.toNanos();
        try (Statement s = c.createStatement()) {
            while (true) {
                try (ResultSet rs = s.executeQuery(sql.toString())) {
                    rs.next();
                    if (rs.getInt(1) == 0) {
                        return;
                    }
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("connections " + ids + " still listed " + KILL_TIMEOUT
                            + " after KILL");
                }
                LockSupport.parkNanos(10_000_000L);
            }
        }
    }

    @Override
    public DataSource dataSource(String jdbcUrl) {
        return new SimpleDataSource(jdbcUrl, username(), password());
    }

    @Override
    public DataSource dataSource(String jdbcUrl, String user, String password) {
        return new SimpleDataSource(jdbcUrl, user, password);
    }

    @Override
    public void stop() {
        requireManaged("stop");
        synchronized (lock) {
            if (running) {
                long t = System.nanoTime();
                resumeLocked();
                backend.stop();
                running = false;
                LOG.info("{} stopped in {} ms", displayName(kind()), (System.nanoTime() - t) / 1_000_000);
            }
        }
    }

    @Override
    public void restart() {
        requireManaged("restart");
        synchronized (lock) {
            long t = System.nanoTime();
            if (running) {
                resumeLocked();
                backend.stop();
                running = false;
            }
            startLocked();
            LOG.info("{} restarted at {} in {} ms", displayName(kind()), jdbcUrl(), (System.nanoTime() - t) / 1_000_000);
        }
    }

    @Override
    public void pause() {
        requireManaged("pause");
        synchronized (lock) {
            if (!running) {
                throw new IllegalStateException("cannot pause " + displayName(kind()) + " at " + jdbcUrl()
                        + ": it is stopped");
            }
            if (!paused) {
                backend.pause(true);
                paused = true;
                LOG.info("{} paused (SIGSTOP)", displayName(kind()));
            }
        }
    }

    @Override
    public void resume() {
        requireManaged("resume");
        synchronized (lock) {
            if (paused) {
                resumeLocked();
                LOG.info("{} resumed (SIGCONT)", displayName(kind()));
            }
        }
    }

    private void resumeLocked() {
        if (paused) {
            backend.pause(false);
            paused = false;
        }
    }

    @Override
    public void readOnly(boolean readOnly) {
        requireManaged("make read-only");
        synchronized (lock) {
            long t = System.nanoTime();
            int terminated;
            if (kind() == Kind.POSTGRES) {
                execute(readOnly ? "make read-only" : "make writable", List.of(
                        readOnly ? "ALTER SYSTEM SET default_transaction_read_only = on"
                                : "ALTER SYSTEM RESET default_transaction_read_only",
                        "SELECT pg_reload_conf()"));
                awaitSetting("SHOW default_transaction_read_only", readOnly ? "on" : "off");
                terminated = readOnly ? terminatePostgresSessions() : 0;
            } else {
                List<String> statements = new ArrayList<>();
                if (kind() == Kind.MYSQL) {
                    statements.add("SET GLOBAL super_read_only = " + (readOnly ? "ON" : "OFF"));
                }
                statements.add("SET GLOBAL read_only = " + (readOnly ? "ON" : "OFF"));
                execute(readOnly ? "make read-only" : "make writable", statements);
                terminated = readOnly ? killMySqlConnections(null, null) : 0;
            }
            LOG.info("{} made {} in {} ms{}", displayName(kind()), readOnly ? "read-only" : "writable",
                    (System.nanoTime() - t) / 1_000_000, readOnly ? ", " + terminated + " sessions terminated" : "");
        }
    }

    /** Waits until a new session sees {@code expected} from {@code sql} (a configuration reload is asynchronous). */
    private void awaitSetting(String sql, String expected) {
        long deadline = System.nanoTime() + KILL_TIMEOUT.toNanos();
        String actual = null;
        while (System.nanoTime() - deadline < 0) {
            try (Connection c = adminConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
                rs.next();
                actual = rs.getString(1);
                if (expected.equals(actual)) {
                    return;
                }
            } catch (SQLException e) {
                actual = e.toString();
            }
            LockSupport.parkNanos(10_000_000L);
        }
        throw new IllegalStateException(sql + " on " + jdbcUrl() + " still answers '" + actual + "', not '" + expected
                + "', " + KILL_TIMEOUT + " after the change");
    }

    private int terminatePostgresSessions() {
        String sql = "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, " + KILL_TIMEOUT.toMillis() + ")) "
                + "FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()";
        try (Connection c = adminConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot terminate the sessions on " + jdbcUrl() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String createSmallTablespace(String name, long bytes) {
        checkName("tablespace name", name, 63);
        if (kind() != Kind.POSTGRES || mode() != ServerMode.EMBEDDED) {
            throw new UnsupportedOperationException("a small tablespace needs an embedded Postgres, not "
                    + displayName(kind()) + " (" + mode() + ")");
        }
        synchronized (lock) {
            execute("drop tablespace " + name, List.of("DROP TABLESPACE IF EXISTS " + name));
            java.nio.file.Path dir = backend.smallFilesystem(name, bytes);
            ServerFiles.createDirectories(dir);
            execute("create tablespace " + name, List.of("CREATE TABLESPACE " + name + " LOCATION '"
                    + dir.toAbsolutePath().toString().replace("'", "''") + "'"));
            return name;
        }
    }

    /** Stops the server at JVM exit, quietly. */
    void shutdown() {
        if (mode() == ServerMode.EXTERNAL) {
            return;
        }
        synchronized (lock) {
            try {
                resumeLocked();
            } catch (RuntimeException e) {
                LOG.warn("Could not resume {} before stopping it: {}", displayName(kind()), e.toString());
            }
            running = false;
            backend.close();
        }
    }

    private void requireManaged(String what) {
        if (mode() == ServerMode.EXTERNAL) {
            throw new UnsupportedOperationException("cannot " + what + " the existing server at " + jdbcUrl()
                    + " (given by system properties); run the test with embedded or docker servers");
        }
    }

    private Connection adminConnection() throws SQLException {
        return dataSource(jdbcUrl()).getConnection();
    }

    private void execute(String what, List<String> statements) {
        try (Connection c = adminConnection(); Statement s = c.createStatement()) {
            for (String sql : statements) {
                s.execute(sql);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot " + what + " on " + jdbcUrl() + ": " + e.getMessage(), e);
        }
    }

    private static void checkName(String what, String name, int maxLength) {
        if (name == null || name.length() > maxLength || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(what + " '" + name + "' must be lower-case letters, digits and "
                    + "underscores, start with a letter and have at most " + maxLength + " characters");
        }
    }

    @Override
    public String toString() {
        return displayName(kind()) + " " + version + " (" + mode() + ") at " + jdbcUrl();
    }
}
