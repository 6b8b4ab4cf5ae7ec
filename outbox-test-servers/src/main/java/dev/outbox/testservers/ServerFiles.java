package dev.outbox.testservers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where embedded servers keep their files: {@code <outbox.test.servers.dir>} (default
 * {@code target/outbox-test-servers} under the working directory, which Maven sets to the module). Binaries
 * extracted once are shared by later runs; each JVM's data and logs live in {@code <kind>-<pid>}, kept after
 * the JVM exits (to read the logs of a failed run) and deleted by the next run.
 * Thread-safe (stateless).
 */
final class ServerFiles {
    static final String DIR_PROPERTY = "outbox.test.servers.dir";
    private static final Logger LOG = LoggerFactory.getLogger(ServerFiles.class);

    private ServerFiles() {
    }

    static Path root() {
        String configured = System.getProperty(DIR_PROPERTY);
        Path root = configured != null ? Paths.get(configured) : Paths.get("target", "outbox-test-servers");
        return createDirectories(root.toAbsolutePath().normalize());
    }

    /** A directory shared by every run, e.g. for extracted binaries. */
    static Path shared(String name) {
        return createDirectories(root().resolve(name));
    }

    /**
     * A fresh directory for this JVM's server {@code name}; directories of the same name left by JVMs that are no
     * longer alive are deleted first.
     */
    static Path instance(String name) {
        Path root = root();
        String prefix = name + "-";
        try (Stream<Path> children = Files.list(root)) {
            children.filter(p -> p.getFileName().toString().startsWith(prefix))
                    .filter(p -> {
                        String pid = p.getFileName().toString().substring(prefix.length());
                        return pid.matches("[0-9]+") && ProcessHandle.of(Long.parseLong(pid)).isEmpty();
                    })
                    .forEach(stale -> {
                        killOrphan(stale);
                        SmallFilesystems.unmountLeftovers(stale);
                        deleteQuietly(stale);
                    });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + root, e);
        }
        Path dir = root.resolve(prefix + ProcessHandle.current().pid());
        deleteQuietly(dir);
        return createDirectories(dir);
    }

    /** Kills a database server left running by a JVM that died without its shutdown hook. */
    private static void killOrphan(Path staleDirectory) {
        Path pidFile = staleDirectory.resolve(ServerProcess.PID_FILE);
        try {
            if (!Files.exists(pidFile)) {
                return;
            }
            long pid = Long.parseLong(Files.readString(pidFile, StandardCharsets.US_ASCII).trim());
            ProcessHandle.of(pid)
                    .filter(p -> p.info().command().map(c -> c.startsWith(root().toString())).orElse(false))
                    .ifPresent(p -> {
                        LOG.warn("Killing {} (pid {}) left running by an earlier test run", p.info().command()
                                .orElse("?"), pid);
                        p.destroyForcibly();
                        p.onExit().join();
                    });
        } catch (IOException | RuntimeException e) {
            LOG.warn("Could not check for an orphan server in {}: {}", staleDirectory, e.toString());
        }
    }

    static Path createDirectories(Path dir) {
        try {
            return Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create directory " + dir, e);
        }
    }

    static void deleteQuietly(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                    Files.deleteIfExists(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            LOG.warn("Could not delete {}: {}", dir, e.toString());
        }
    }
}
