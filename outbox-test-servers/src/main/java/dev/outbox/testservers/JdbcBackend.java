package dev.outbox.testservers;

/**
 * One way of providing a database server (embedded, Docker, external): its life cycle and address. What is the
 * same for every way (databases, users, killing connections) lives in {@link DefaultJdbcServer}.
 *
 * <p>Called by {@link DefaultJdbcServer} under its lock only; implementations need not be thread-safe.
 */
interface JdbcBackend {

    JdbcServer.Kind kind();

    ServerMode mode();

    /** Starts the server (the first time: creates its files); returns after it accepts connections. */
    void start();

    /** Stops the server at once; does nothing if it is not running. */
    void stop();

    /** Stops for good at JVM exit (for Docker: removes the container). */
    default void close() {
        stop();
    }

    /** JDBC URL of the default database, valid once started; constant across restarts. */
    String jdbcUrl();

    String username();

    String password();

    /** Extra words for the start log line, e.g. the data directory; may be empty. */
    String describe();

    /** Stops (SIGSTOP) or continues (SIGCONT) every process of the running server. */
    void pause(boolean paused);

    /**
     * A new, empty directory on a file system of at most {@code bytes} that the server may write; unmounted by
     * {@link #close()}.
     *
     * @throws UnsupportedOperationException if this backend or machine cannot provide one
     */
    default java.nio.file.Path smallFilesystem(String name, long bytes) {
        throw new UnsupportedOperationException(DefaultJdbcServer.displayName(kind()) + " (" + mode()
                + ") cannot be given a small file system");
    }
}
