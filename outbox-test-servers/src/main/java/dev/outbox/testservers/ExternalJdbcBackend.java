package dev.outbox.testservers;

/** An existing database server named by system properties. Immutable. */
final class ExternalJdbcBackend implements JdbcBackend {
    private final JdbcServer.Kind kind;
    private final String url;
    private final String user;
    private final String password;

    ExternalJdbcBackend(JdbcServer.Kind kind, String url, String user, String password) {
        this.kind = kind;
        this.url = url;
        this.user = user;
        this.password = password;
    }

    @Override
    public JdbcServer.Kind kind() {
        return kind;
    }

    @Override
    public ServerMode mode() {
        return ServerMode.EXTERNAL;
    }

    @Override
    public void start() {
        // Already running.
    }

    @Override
    public void stop() {
        throw new UnsupportedOperationException("cannot stop the existing server at " + url);
    }

    @Override
    public void pause(boolean paused) {
        throw new UnsupportedOperationException("cannot pause the existing server at " + url);
    }

    @Override
    public void close() {
        // Not ours.
    }

    @Override
    public String jdbcUrl() {
        return url;
    }

    @Override
    public String username() {
        return user;
    }

    @Override
    public String password() {
        return password;
    }

    @Override
    public String describe() {
        return "";
    }
}
