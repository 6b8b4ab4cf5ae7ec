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
 * <p>Implementations are thread-safe. {@link #stop()} and {@link #restart()} affect every test of the JVM that
 * shares the server; tests that call them must not run in parallel with other tests using the same server.
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
     * Creates the user {@code name} with {@code password} and every privilege on every database, or, if it
     * exists, resets its password and privileges.
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
}
