package dev.outbox.benchmarks;

import javax.sql.DataSource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * CPU time of a local Postgres server: its postmaster (the first line of {@code postmaster.pid} in its data
 * directory) and every process it forked (backends, WAL writer, checkpointer, ...), read from {@code /proc}. The
 * other half of a drain's cost next to the JVM's own CPU time. Reports NaN when the server is not a local Linux
 * process (a server in Docker, macOS). A local MySQL or MariaDB is one process ({@link #ofMySql}). Thread-safe.
 */
final class ServerCpu {
    private static final Path PROC = Path.of("/proc");
    private final long postmaster;
    private final double ticksPerSecond;

    private ServerCpu(long postmaster, double ticksPerSecond) {
        this.postmaster = postmaster;
        this.ticksPerSecond = ticksPerSecond;
    }

    /** The clock of {@code database}'s server if it is a local Postgres; else one that reads NaN. */
    static ServerCpu of(BenchDatabase database) {
        if (!database.name().equals("postgres")) {
            return ofMySql(database.pool());
        }
        return ofPostgres(database.pool());
    }

    /** The clock of the Postgres server {@code pool} connects to if it is local; else one that reads NaN. */
    static ServerCpu ofPostgres(DataSource pool) {
        if (!Files.isDirectory(PROC)) {
            return new ServerCpu(-1, 0);
        }
        try {
            String dataDirectory = query(pool, "SHOW data_directory");
            List<String> pid = Files.readAllLines(Path.of(dataDirectory, "postmaster.pid"), StandardCharsets.US_ASCII);
            long postmaster = Long.parseLong(pid.get(0).trim());
            Path cmdline = PROC.resolve(Long.toString(postmaster)).resolve("cmdline");
            if (!Files.isReadable(cmdline)
                    || !Files.readString(cmdline, StandardCharsets.ISO_8859_1).contains("postgres")) {
                return new ServerCpu(-1, 0);
            }
            return new ServerCpu(postmaster, 100.0); // USER_HZ: 100 on every Linux build the JDK runs on
        } catch (IOException | RuntimeException e) {
            return new ServerCpu(-1, 0);
        }
    }

    /** The clock of the MySQL or MariaDB server {@code pool} connects to if it is local (one process, {@code @@pid_file}). */
    static ServerCpu ofMySql(DataSource pool) {
        if (!Files.isDirectory(PROC)) {
            return new ServerCpu(-1, 0);
        }
        try {
            long pid = Long.parseLong(Files.readString(Path.of(query(pool, "SELECT @@pid_file")),
                    StandardCharsets.US_ASCII).trim());
            Path cmdline = PROC.resolve(Long.toString(pid)).resolve("cmdline");
            String command = Files.isReadable(cmdline) ? Files.readString(cmdline, StandardCharsets.ISO_8859_1) : "";
            return command.contains("mysqld") || command.contains("mariadbd") ? new ServerCpu(pid, 100.0)
                    : new ServerCpu(-1, 0);
        } catch (IOException | RuntimeException e) {
            return new ServerCpu(-1, 0);
        }
    }

    /** Seconds of CPU (user + system) the server's processes have used so far; NaN if unknown. */
    double seconds() {
        if (postmaster < 0) {
            return Double.NaN;
        }
        long ticks = 0;
        try (Stream<Path> processes = Files.list(PROC)) {
            for (Path p : (Iterable<Path>) processes::iterator) {
                String name = p.getFileName().toString();
                if (name.isEmpty() || !Character.isDigit(name.charAt(0))) {
                    continue;
                }
                String[] stat = stat(p);
                if (stat == null) {
                    continue;
                }
                // Fields after "(comm)": state ppid ... utime(14) stime(15), counted from pid = 1.
                if (Long.parseLong(name) == postmaster || Long.parseLong(stat[1]) == postmaster) {
                    ticks += Long.parseLong(stat[11]) + Long.parseLong(stat[12]);
                }
            }
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
        return ticks / ticksPerSecond;
    }

    /** The fields of /proc/PID/stat after the command name, or null if the process is gone. */
    private static String[] stat(Path process) {
        try {
            String s = Files.readString(process.resolve("stat"), StandardCharsets.US_ASCII);
            return s.substring(s.lastIndexOf(')') + 2).split(" ");
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static String query(DataSource ds, String sql) {
        try (var c = ds.getConnection(); var s = c.createStatement(); var rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }
}
