package dev.outbox.testservers;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * Runs a database and Kafka for developing your own application against, without Docker: embedded servers bound to
 * 127.0.0.1 (as the tests use), a database of the application's own and its topics, and the Spring Boot properties
 * that connect to them, printed and, with {@code --properties-file}, written to a file the application imports
 * ({@code spring.config.import=optional:file:<path>}). Runs until the process is stopped (Ctrl-C); the servers
 * stop with it, and their files (under {@code outbox.test.servers.dir}, default {@code target/outbox-test-servers})
 * are removed by the next run: every start is a fresh database.
 *
 * <pre>
 * ./dev-servers.sh --database=postgres --name=payments --topics=payments:3 --properties-file=/tmp/dev.properties
 * </pre>
 *
 * Options: {@code --database=postgres|mysql|mariadb} (default postgres), {@code --name=<database>} (default
 * {@code app}), {@code --topics=<topic>[:<partitions>],...} (default none; the broker creates no topic by itself),
 * {@code --properties-file=<path>}. Servers are embedded unless {@code -Doutbox.test.servers} says otherwise.
 */
public final class DevServers {
    private static final String USAGE = "usage: DevServers [--database=postgres|mysql|mariadb] [--name=<database>]"
            + " [--topics=<topic>[:<partitions>],...] [--properties-file=<path>]";

    private DevServers() {
    }

    /**
     * Starts the servers, prints their properties, and waits until the process is stopped.
     *
     * @param args the options (see the class documentation)
     * @throws InterruptedException if the main thread is interrupted while the servers run
     */
    public static void main(String[] args) throws InterruptedException {
        try {
            start(args, System.out);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
        }
        System.out.println("# Dev servers running; stop this process (Ctrl-C) to stop them.");
        System.out.flush();
        new CountDownLatch(1).await(); // until the JVM is stopped; the servers stop in TestServers' shutdown hook
    }

    /**
     * Starts (or reuses, in this JVM) the servers the options name, creates the database and the topics, and prints
     * the Spring Boot properties that connect to them, one {@code key=value} per line, to {@code out}.
     *
     * @param args the options (see the class documentation)
     * @param out  where the properties are printed
     * @return the properties, in the order printed
     * @throws IllegalArgumentException naming an option that is not valid
     */
    public static Map<String, String> start(String[] args, PrintStream out) {
        Options options = Options.parse(args);
        if (System.getProperty(TestServers.MODE_PROPERTY) == null) {
            System.setProperty(TestServers.MODE_PROPERTY, "embedded");
        }
        JdbcServer db = TestServers.jdbc(options.database);
        KafkaServer kafka = TestServers.kafka();
        String url = db.createDatabase(options.name);
        options.topics.forEach(kafka::createTopic);

        Map<String, String> properties = new LinkedHashMap<>();
        properties.put("spring.datasource.url", url);
        properties.put("spring.datasource.username", db.username());
        properties.put("spring.datasource.password", db.password());
        properties.put("spring.kafka.bootstrap-servers", kafka.bootstrapServers());
        StringBuilder text = new StringBuilder("# " + db.kind() + " " + db.version() + " (" + db.mode()
                + ") and Kafka " + kafka.version() + " (" + kafka.mode() + ")\n");
        properties.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        out.print(text);
        out.flush();
        if (options.propertiesFile != null) {
            write(options.propertiesFile, text.toString());
            out.println("# written to " + options.propertiesFile.toAbsolutePath());
            out.flush();
        }
        return properties;
    }

    private static void write(Path file, String text) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(file, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the properties to " + file, e);
        }
    }

    /** The parsed command line. */
    private record Options(JdbcServer.Kind database, String name, Map<String, Integer> topics, Path propertiesFile) {
        static Options parse(String[] args) {
            JdbcServer.Kind database = JdbcServer.Kind.POSTGRES;
            String name = "app";
            Map<String, Integer> topics = new LinkedHashMap<>();
            Path file = null;
            for (String arg : args) {
                int eq = arg.indexOf('=');
                String key = eq < 0 ? arg : arg.substring(0, eq);
                String value = eq < 0 ? "" : arg.substring(eq + 1).strip();
                switch (key) {
                    case "--database" -> database = kind(value);
                    case "--name" -> {
                        if (!value.matches("[a-z][a-z0-9_]{0,62}")) {
                            throw new IllegalArgumentException("--name must be a database name of lower-case"
                                    + " letters, digits and _ (starting with a letter): '" + value + "'");
                        }
                        name = value;
                    }
                    case "--topics" -> topics.putAll(topics(value));
                    case "--properties-file" -> {
                        if (value.isEmpty()) {
                            throw new IllegalArgumentException("--properties-file needs a path");
                        }
                        file = Paths.get(value);
                    }
                    default -> throw new IllegalArgumentException("unknown option '" + arg + "'");
                }
            }
            return new Options(database, name, topics, file);
        }

        private static JdbcServer.Kind kind(String value) {
            return switch (value.toLowerCase(Locale.ROOT)) {
                case "postgres", "postgresql" -> JdbcServer.Kind.POSTGRES;
                case "mysql" -> JdbcServer.Kind.MYSQL;
                case "mariadb" -> JdbcServer.Kind.MARIADB;
                default -> throw new IllegalArgumentException("--database must be postgres, mysql or mariadb: '"
                        + value + "'");
            };
        }

        private static Map<String, Integer> topics(String value) {
            Map<String, Integer> topics = new LinkedHashMap<>();
            for (String part : value.split(",")) {
                String p = part.strip();
                if (p.isEmpty()) {
                    continue;
                }
                int colon = p.lastIndexOf(':');
                String topic = colon < 0 ? p : p.substring(0, colon);
                int partitions = 1;
                if (colon >= 0) {
                    try {
                        partitions = Integer.parseInt(p.substring(colon + 1));
                    } catch (NumberFormatException e) {
                        partitions = 0;
                    }
                }
                if (topic.isEmpty() || partitions < 1) {
                    throw new IllegalArgumentException("--topics must list <topic>[:<partitions>] with at least one"
                            + " partition: '" + p + "'");
                }
                topics.put(topic, partitions);
            }
            return topics;
        }
    }
}
