package dev.outbox.sidecar;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Writes the files of the sidecar's distribution archive that come from code rather than from the source tree: the
 * DDL of an outbox with the default names, for PostgreSQL and for MySQL/MariaDB, exactly as {@code schema} prints it
 * ({@code ddl/}), and the Grafana dashboard and Prometheus alert rules of {@code outbox-micrometer} as plain files
 * ({@code monitoring/}). The build runs it at {@code package}; not for applications. Stateless.
 */
public final class DistributionFiles {
    private DistributionFiles() {
    }

    /**
     * Writes the files under the directory {@code args[0]}.
     *
     * @param args the output directory, exactly one argument; created if missing, files in it replaced
     * @throws IOException              if a file cannot be written
     * @throws IllegalArgumentException if there is not exactly one argument
     */
    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: DistributionFiles <output directory>");
        }
        Path out = Path.of(args[0]);
        Files.createDirectories(out.resolve("ddl"));
        Files.writeString(out.resolve("ddl/postgres.sql"), ddl("jdbc:postgresql://db:5432/app"));
        Files.writeString(out.resolve("ddl/mysql.sql"), ddl("jdbc:mysql://db:3306/app"));
        Files.createDirectories(out.resolve("monitoring"));
        for (String name : new String[]{"grafana-dashboard.json", "prometheus-alerts.yml"}) {
            try (InputStream in = DistributionFiles.class.getResourceAsStream("/dev/outbox/micrometer/" + name)) {
                if (in == null) {
                    throw new IllegalStateException("dev/outbox/micrometer/" + name + " is not on the class path");
                }
                Files.copy(in, out.resolve("monitoring").resolve(name), StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** The DDL {@code schema} prints for one outbox named "outbox" over {@code url}, every other setting default. */
    private static String ddl(String url) {
        SidecarProperties.Outbox o = new SidecarProperties.Outbox();
        o.getDatasource().setUrl(url);
        return SchemaCommand.ddl("outbox", o);
    }
}
