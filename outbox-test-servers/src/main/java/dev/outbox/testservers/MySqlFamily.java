package dev.outbox.testservers;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;

/** What the embedded MySQL and MariaDB servers share: files, readiness, the default database. Stateless. */
final class MySqlFamily {
    static final String URL_PARAMETERS = "?sslMode=DISABLED&allowPublicKeyRetrieval=true";
    static final String DEFAULT_DATABASE = "test";
    private static final long START_TIMEOUT_SECONDS = 60;

    private MySqlFamily() {
    }

    static void requireLinuxX64(String what) {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new IllegalStateException("embedded " + what + " runs on Linux x86-64 only, not " + os + "/" + arch
                    + "; use Docker (-D" + TestServers.MODE_PROPERTY + "=docker) or an existing server");
        }
    }

    static boolean runningAsRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /**
     * Returns {@code target}, creating it first (once, shared by later runs and concurrent JVMs) by
     * {@code creator} filling a temporary directory that is then renamed into place.
     */
    static Path createOnce(Path target, Consumer<Path> creator) {
        if (Files.isDirectory(target)) {
            return target;
        }
        Path temp = target.resolveSibling(target.getFileName() + ".tmp-" + ProcessHandle.current().pid());
        ServerFiles.deleteQuietly(temp);
        ServerFiles.createDirectories(temp);
        try {
            creator.accept(temp);
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException | DirectoryNotEmptyException | AtomicMoveNotSupportedException raced) {
                if (!Files.isDirectory(target)) {
                    throw raced;
                }
            }
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + target, e);
        } finally {
            ServerFiles.deleteQuietly(temp);
        }
    }

    /**
     * Extracts the gzipped tar {@code resource} from the class path into {@code directory}, keeping executable
     * bits; symbolic links are kept when relative and dropped when absolute (they point into the build machine).
     */
    static void extractTarGz(String resource, Path directory) {
        try (InputStream raw = MySqlFamily.class.getResourceAsStream(resource)) {
            if (raw == null) {
                throw new IllegalStateException("resource " + resource + " is not on the class path");
            }
            try (TarArchiveInputStream tar = new TarArchiveInputStream(new GzipCompressorInputStream(raw))) {
                TarArchiveEntry entry;
                while ((entry = tar.getNextEntry()) != null) {
                    Path path = directory.resolve(entry.getName()).normalize();
                    if (!path.startsWith(directory)) {
                        throw new IllegalStateException("entry " + entry.getName() + " of " + resource
                                + " leaves the target directory");
                    }
                    if (entry.isDirectory()) {
                        Files.createDirectories(path);
                    } else if (entry.isSymbolicLink()) {
                        if (!entry.getLinkName().startsWith("/")) {
                            Files.createDirectories(path.getParent());
                            Files.createSymbolicLink(path, Path.of(entry.getLinkName()));
                        }
                    } else if (entry.isFile()) {
                        Files.createDirectories(path.getParent());
                        Files.copy(tar, path, StandardCopyOption.REPLACE_EXISTING);
                        Files.setPosixFilePermissions(path, permissions(entry.getMode()));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract " + resource + " to " + directory, e);
        }
    }

    private static Set<PosixFilePermission> permissions(int mode) {
        Set<PosixFilePermission> set = EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
                PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ);
        if ((mode & 0100) != 0) {
            set.add(PosixFilePermission.OWNER_EXECUTE);
            set.add(PosixFilePermission.GROUP_EXECUTE);
            set.add(PosixFilePermission.OTHERS_EXECUTE);
        }
        return set;
    }

    static void copyTree(Path from, Path to) {
        try {
            Files.walkFileTree(from, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                    Files.createDirectories(to.resolve(from.relativize(dir).toString()));
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.copy(file, to.resolve(from.relativize(file).toString()), StandardCopyOption.COPY_ATTRIBUTES);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy " + from + " to " + to, e);
        }
    }

    /** Unix sockets have a path limit of about 100 bytes: use {@code /tmp} when the instance path is too long. */
    static Path socketPath(Path directory, String name) {
        Path preferred = directory.resolve(name + ".sock");
        if (preferred.toString().length() < 100) {
            return preferred;
        }
        return Path.of(System.getProperty("java.io.tmpdir"), "outbox-" + name + "-" + ProcessHandle.current().pid()
                + ".sock");
    }

    static String url(int port, String database) {
        return "jdbc:mysql://127.0.0.1:" + port + "/" + database + URL_PARAMETERS;
    }

    /** Waits until root can connect over TCP, failing early if the server process exits. */
    static void awaitReady(ServerProcess process, int port, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
        SQLException last = null;
        while (System.nanoTime() - deadline < 0) {
            process.checkAlive();
            try (Connection c = connect(port, "")) {
                if (c.isValid(2)) {
                    return;
                }
            } catch (SQLException e) {
                last = e;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
        throw new IllegalStateException(what + " did not accept connections on port " + port + " within "
                + START_TIMEOUT_SECONDS + " s", last);
    }

    static Connection connect(int port, String database) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "root");
        p.setProperty("password", "");
        p.setProperty("connectTimeout", "2000");
        return DriverManager.getConnection(url(port, database), p);
    }

    /**
     * Creates the default database and drops anonymous users (MariaDB's installer creates some; they would
     * shadow users created for tests).
     */
    static void prepare(int port) {
        try (Connection c = connect(port, ""); Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE IF NOT EXISTS " + DEFAULT_DATABASE);
            List<String> hosts = new ArrayList<>();
            try (ResultSet rs = s.executeQuery("SELECT host FROM mysql.user WHERE user = ''")) {
                while (rs.next()) {
                    hosts.add(rs.getString(1));
                }
            }
            for (String host : hosts) {
                s.execute("DROP USER ''@'" + host.replace("'", "''") + "'");
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot prepare the server on port " + port + ": " + e.getMessage(), e);
        }
    }

    /** Extracts every file under {@code prefix} (a folder in a jar on the class path) into {@code directory}. */
    static void extractFromJar(String prefix, Path directory, Set<String> executableFolders) {
        URL marker = MySqlFamily.class.getClassLoader().getResource(prefix);
        if (marker == null) {
            throw new IllegalStateException("folder " + prefix + " is not on the class path");
        }
        try {
            URLConnection connection = marker.openConnection();
            if (!(connection instanceof JarURLConnection)) {
                throw new IllegalStateException(prefix + " is not in a jar: " + marker);
            }
            try (JarFile jar = ((JarURLConnection) connection).getJarFile()) {
                for (JarEntry entry : Collections.list(jar.entries())) {
                    if (entry.isDirectory() || !entry.getName().startsWith(prefix)) {
                        continue;
                    }
                    String relative = entry.getName().substring(prefix.length());
                    Path path = directory.resolve(relative).normalize();
                    Files.createDirectories(path.getParent());
                    try (InputStream in = jar.getInputStream(entry)) {
                        Files.copy(in, path, StandardCopyOption.REPLACE_EXISTING);
                    }
                    int slash = relative.indexOf('/');
                    boolean executable = slash > 0 && executableFolders.contains(relative.substring(0, slash));
                    Files.setPosixFilePermissions(path, permissions(executable ? 0755 : 0644));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract " + prefix + " to " + directory, e);
        }
    }

    /** The version in a Maven artifact's {@code pom.properties}, read from the class path. */
    static String artifactVersion(String groupId, String artifactId) {
        String resource = "/META-INF/maven/" + groupId + "/" + artifactId + "/pom.properties";
        try (InputStream in = MySqlFamily.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException(groupId + ":" + artifactId + " is not on the class path");
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + resource, e);
        }
    }
}
