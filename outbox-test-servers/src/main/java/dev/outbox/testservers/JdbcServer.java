package dev.outbox.testservers;

import javax.sql.DataSource;

/**
 * A running database server for tests: its address, credentials of an administrative user, isolated databases
 * on demand, and fault hooks.
 *
 * <p><b>Clients and {@link #killConnections(String)}.</b> A test names each client it may want to cut off by a
 * database user: {@link #createUser(String, String)} creates one with every privilege, and
 * {@link #killConnections(String)} kills every connection of that user (on Postgres also every connection whose
 * {@code application_name} is that name, so a Postgres test may instead add {@code ApplicationName=<name>} to
 * its JDBC URL, and may then connect as {@link #username()}). The administrative user itself cannot be named.
 *
 * <p><b>Server faults.</b> {@link #stop()}, {@link #restart()}, {@link #pause()} / {@link #resume()},
 * {@link #readOnly(boolean)} and {@link #createSmallTablespace(String, long)} (a disk that fills up) are what an
 * operator sees a database do in an outage: a crash or a restart, a process that hangs, a fail-over to a server
 * that refuses writes, a full disk.
 *
 * <p>Implementations are thread-safe. The fault hooks affect every test of the JVM that shares the server; tests
 * that call them must not run in parallel with other tests using the same server.
 */
public interface JdbcServer {

    /** The database product. */
    enum Kind {
        /** PostgreSQL. */
        POSTGRES,
        /** MySQL 8. */
        MYSQL,
        /** MariaDB. */
        MARIADB
    }

    /** The database product of this server. */
    Kind kind();

    /** How this server was provided. */
    ServerMode mode();

    /** The server's version as it reports it, e.g. {@code 17.6} or {@code 8.0.31}. */
    String version();

    /**
     * JDBC URL of the default database: {@code postgres} on embedded Postgres, {@code test} on the others, the
     * given one on an existing server. Tests should use {@link #createDatabase(String)} instead.
     */
    String jdbcUrl();

    /** The administrative user, with every privilege. */
    String username();

    /** Password of {@link #username()}, possibly empty, never null. */
    String password();

    /**
     * Drops the database {@code name} if it exists (killing its connections), creates it empty, and returns its
     * JDBC URL. Tests use one database each so they do not see each other's tables.
     *
     * @param name lower-case letters, digits and underscores, starting with a letter, at most 63 characters
     * @throws IllegalArgumentException if {@code name} is not such a name
     * @throws IllegalStateException if the server refuses
     */
    String createDatabase(String name);

    /**
     * Creates the user {@code name} with {@code password} and every privilege on every database (on MariaDB all
     * but {@code READ_ONLY ADMIN}, so that {@link #readOnly(boolean)} holds for it), or, if it exists, resets its
     * password and privileges.
     *
     * @param name lower-case letters, digits and underscores, starting with a letter, at most 32 characters
     * @param password any characters but quotes and backslashes, possibly empty
     * @throws IllegalArgumentException if {@code name} or {@code password} is not acceptable
     */
    void createUser(String name, String password);

    /**
     * Kills every connection of the user {@code client} (on Postgres, also every connection whose
     * {@code application_name} is {@code client}) and returns how many it killed. Live connections of that client
     * fail on their next use; new ones can be opened at once.
     *
     * @throws IllegalArgumentException if {@code client} is {@link #username()}
     */
    int killConnections(String client);

    /** A new non-pooling data source for {@code jdbcUrl} with the administrative credentials. */
    DataSource dataSource(String jdbcUrl);

    /** A new non-pooling data source for {@code jdbcUrl} with the given credentials. */
    DataSource dataSource(String jdbcUrl, String user, String password);

    /**
     * Stops the server at once: open connections are cut, uncommitted transactions are lost, committed data is
     * kept. Embedded and Docker MySQL/MariaDB are killed (SIGKILL, crash recovery at the next start); embedded
     * Postgres gets a "fast" shutdown (sessions terminated without waiting, what {@code docker stop} does), Docker
     * Postgres is killed. Does nothing if it is already stopped.
     *
     * @throws UnsupportedOperationException if the server is {@link ServerMode#EXTERNAL}
     */
    void stop();

    /**
     * Stops the server if it runs, then starts it again on the same address with the same data.
     *
     * @throws UnsupportedOperationException if the server is {@link ServerMode#EXTERNAL}
     * @throws IllegalStateException if it cannot start again (for example, its port was taken meanwhile)
     */
    void restart();

    /**
     * Freezes the server: every one of its processes is stopped (SIGSTOP; {@code docker pause} in Docker). Open
     * connections stay open but nothing answers: statements hang until the client's own timeouts fire, new
     * connections are not accepted. Does nothing if it is already paused.
     *
     * @throws UnsupportedOperationException if the server is {@link ServerMode#EXTERNAL}
     * @throws IllegalStateException if the server is stopped
     */
    void pause();

    /**
     * Lets a {@linkplain #pause() paused} server run on (SIGCONT; {@code docker unpause}); what clients sent
     * meanwhile is answered now. Does nothing if it is not paused.
     *
     * @throws UnsupportedOperationException if the server is {@link ServerMode#EXTERNAL}
     */
    void resume();

    /**
     * Makes the whole server refuse writes, or accept them again, as a database that failed over to a read-only
     * node does: on Postgres {@code default_transaction_read_only} (set with {@code ALTER SYSTEM}, reloaded),
     * refused with SQLSTATE 25006; on MySQL {@code super_read_only}, on MariaDB {@code read_only}, refused with
     * error 1290 (or 1836). Turning it on also terminates every other session (the fail-over cut them), so that
     * clients reconnect to a server that refuses their writes; turning it off leaves sessions alone.
     *
     * @throws UnsupportedOperationException if the server is {@link ServerMode#EXTERNAL}
     */
    void readOnly(boolean readOnly);

    /**
     * Creates the Postgres tablespace {@code name} on a file system of its own holding at most {@code bytes}, so
     * that a table placed in it ({@code CREATE TABLE … TABLESPACE name}, or {@code ALTER TABLE … SET TABLESPACE})
     * meets a full disk: writes fail with SQLSTATE 53100 ({@code disk_full}), and work again once rows are
     * deleted and the table vacuumed, or the table moved. The file system is a {@code tmpfs} mounted under the
     * server's directory (which needs root, or the {@code CAP_SYS_ADMIN} capability) and unmounted at JVM exit.
     * If the tablespace exists, it is dropped first (its tables must have been dropped).
     *
     * @param name  lower-case letters, digits and underscores, starting with a letter, at most 63 characters
     * @param bytes the file system's size, at least 64 KiB; rounded up to whole pages
     * @return {@code name}
     * @throws UnsupportedOperationException if the server is not an embedded Postgres, or this machine does not
     *         let the test mount a file system (the message says why)
     */
    String createSmallTablespace(String name, long bytes);
}
