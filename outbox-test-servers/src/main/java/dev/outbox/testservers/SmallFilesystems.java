package dev.outbox.testservers;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Small {@code tmpfs} file systems mounted for tests that need a disk that fills up. Mounting needs root (or
 * {@code CAP_SYS_ADMIN}); where the machine refuses, {@link #mount} says so. Not thread-safe (used under a
 * backend's caller's lock).
 */
final class SmallFilesystems {
    private static final Logger LOG = LoggerFactory.getLogger(SmallFilesystems.class);
    static final long MIN_BYTES = 64 * 1024;
    /** Where in a server's directory its small file systems are mounted, one folder each. */
    static final String SUBDIRECTORY = "small-fs";

    private final List<Path> mounted = new ArrayList<>();

    /**
     * Mounts a {@code tmpfs} of {@code bytes} on {@code directory} (created if missing; if something is mounted
     * there already, it is unmounted first) and returns it.
     *
     * @throws IllegalArgumentException if {@code bytes} is below 64 KiB
     * @throws UnsupportedOperationException if the mount is refused
     */
    Path mount(Path directory, long bytes) {
        if (bytes < MIN_BYTES) {
            throw new IllegalArgumentException("a small file system of " + bytes + " bytes is too small: at least "
                    + MIN_BYTES + " bytes");
        }
        if (mounted.remove(directory)) {
            unmount(directory);
        }
        ServerFiles.createDirectories(directory);
        long kib = (bytes + 1023) / 1024;
        try {
            ServerProcess.runQuick("mounting a small file system", List.of("mount", "-t", "tmpfs", "-o",
                    "size=" + kib + "k,mode=0700", "outbox-small-fs", directory.toString()));
        } catch (RuntimeException e) {
            throw new UnsupportedOperationException("this machine does not let tests mount a " + kib
                    + " KiB tmpfs on " + directory + " (needs root or CAP_SYS_ADMIN): " + e.getMessage(), e);
        }
        mounted.add(directory);
        LOG.info("Mounted a {} KiB tmpfs on {}", kib, directory);
        return directory;
    }

    /** Unmounts everything this mounted, quietly. */
    void unmountAll() {
        for (Path dir : List.copyOf(mounted)) {
            unmount(dir);
        }
        mounted.clear();
    }

    /**
     * Unmounts the small file systems a JVM that died without its shutdown hook left under {@code staleDirectory}
     * (in {@code small-fs/<name>}), so that the directory can be deleted.
     */
    static void unmountLeftovers(Path staleDirectory) {
        Path parent = staleDirectory.resolve(SUBDIRECTORY);
        if (!Files.isDirectory(parent)) {
            return;
        }
        try (java.util.stream.Stream<Path> children = Files.list(parent)) {
            children.forEach(SmallFilesystems::unmount);
        } catch (java.io.IOException e) {
            LOG.warn("Could not list {}: {}", parent, e.toString());
        }
    }

    private static void unmount(Path directory) {
        if (!Files.isDirectory(directory)) {
            return;
        }
        try {
            ServerProcess.runQuick("unmounting " + directory, List.of("umount", "-l", directory.toString()));
        } catch (RuntimeException e) {
            LOG.warn("Could not unmount {}: {}", directory, e.getMessage());
        }
    }
}
