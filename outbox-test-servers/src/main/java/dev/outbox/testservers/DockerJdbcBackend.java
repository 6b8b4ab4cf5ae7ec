package dev.outbox.testservers;

import java.sql.Connection;
import java.sql.DriverManager;
import org.testcontainers.containers.JdbcDatabaseContainer;

/**
 * A database in a Docker container, started by Testcontainers, its port bound to a fixed host port so that
 * {@link #stop()} (SIGKILL to the container) and {@link #start()} (the same container again) keep address and data.
 */
final class DockerJdbcBackend implements JdbcBackend {
    private final JdbcServer.Kind kind;
    private final JdbcDatabaseContainer<?> container;
    private final int hostPort;
    private boolean created;

    DockerJdbcBackend(JdbcServer.Kind kind, JdbcDatabaseContainer<?> container, int containerPort) {
        this.kind = kind;
        this.container = container;
        this.hostPort = DockerServers.bindFixedPort(container, containerPort);
    }

    @Override
    public JdbcServer.Kind kind() {
        return kind;
    }

    @Override
    public ServerMode mode() {
        return ServerMode.DOCKER;
    }

    @Override
    public void start() {
        if (!created) {
            container.start();
            created = true;
            return;
        }
        DockerServers.restart(container);
        DockerServers.await(DefaultJdbcServer.displayName(kind) + " container", () -> {
            try (Connection c = DriverManager.getConnection(jdbcUrl(), username(), password())) {
                return c.isValid(2);
            }
        });
    }

    @Override
    public void stop() {
        if (created) {
            DockerServers.kill(container);
        }
    }

    @Override
    public void close() {
        container.stop();
    }

    @Override
    public void pause(boolean paused) {
        DockerServers.pause(container, paused);
    }

    @Override
    public String jdbcUrl() {
        String host = container.getHost();
        if (kind == JdbcServer.Kind.POSTGRES) {
            return "jdbc:postgresql://" + host + ":" + hostPort + "/test";
        }
        return "jdbc:mysql://" + host + ":" + hostPort + "/test" + MySqlFamily.URL_PARAMETERS;
    }

    @Override
    public String username() {
        return container.getUsername();
    }

    @Override
    public String password() {
        return container.getPassword();
    }

    @Override
    public String describe() {
        return "image " + container.getDockerImageName();
    }
}
