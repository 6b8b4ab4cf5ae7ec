package dev.outbox.examples;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * The demo's command line, parsed by picocli: usage help, {@code --version}, and an unknown or misspelt option named
 * with the closest known one. Not thread-safe: one parse.
 */
@Command(name = "./demo.sh", mixinStandardHelpOptions = true, versionProvider = DemoCommand.Version.class,
        sortOptions = false, showDefaultValues = true, usageHelpAutoWidth = true,
        description = {"Runs a small orders service on a Postgres outbox, three dispatchers electing a leader over"
                + " Kafka (or in Postgres) and publishing to Kafka (or RabbitMQ), and a consumer that checks every"
                + " order event arrived in per-key order. Embedded servers unless told otherwise."},
        footer = {"", "On an existing Postgres the demo works in the schema outbox_demo; on an existing Kafka it"
                + " creates the topic if missing and only counts records of its own run.",
                "Exit code: 0 when every order event arrived in order, 1 when one is missing or out of order, 2 for"
                        + " bad options, 3 when the demo could not run."})
final class DemoCommand {
    /** The environment variable holding the password for --postgres-url (unless --postgres-password-file is given). */
    static final String PASSWORD_VARIABLE = "OUTBOX_DEMO_POSTGRES_PASSWORD";
    /** A password in a JDBC URL: a {@code password=} parameter, or {@code user:password@} before the host. */
    private static final java.util.regex.Pattern URL_PASSWORD =
            java.util.regex.Pattern.compile("(?i)[?&;]password=|//[^/?#@]*:[^/?#@]*@");

    @Option(names = "--postgres-url", paramLabel = "URL", description = "An existing Postgres (environment"
            + " OUTBOX_DEMO_POSTGRES_URL). Default: embedded PostgreSQL 17.")
    String postgresUrl;
    @Option(names = "--postgres-user", paramLabel = "USER",
            description = "User for --postgres-url (environment OUTBOX_DEMO_POSTGRES_USER). Default: postgres.")
    String postgresUser;
    @Option(names = "--postgres-password-file", paramLabel = "FILE", description = "A file holding the password for"
            + " --postgres-url (its first line). Default: the environment variable " + PASSWORD_VARIABLE
            + ", else empty. A password is never taken from the command line (ps and shell history show it).")
    java.nio.file.Path postgresPasswordFile;
    /** Refused with a message saying where a password goes instead; hidden from {@code --help}. */
    @Option(names = "--postgres-password", hidden = true, paramLabel = "PASSWORD")
    String postgresPasswordOnCommandLine;
    @Option(names = "--kafka-bootstrap", paramLabel = "HOSTS", description = "An existing Kafka (environment"
            + " OUTBOX_DEMO_KAFKA_BOOTSTRAP). Default: Kafka 4.3.1 in this process.")
    String kafkaBootstrap;
    @Option(names = "--duration", paramLabel = "D", defaultValue = "20s", converter = Time.class,
            description = "How long orders are placed, e.g. 20s, 2m, 500ms.")
    Duration duration;
    @Option(names = "--rate", paramLabel = "N", defaultValue = "1000",
            description = "Orders per second, all writers together; 0 = flat out.")
    int rate;
    @Option(names = "--writers", paramLabel = "N", defaultValue = "4", description = "Writer threads.")
    int writers;
    @Option(names = "--customers", paramLabel = "N", defaultValue = "1000",
            description = "Distinct customers, which are the message keys.")
    int customers;
    @Option(names = "--dispatchers", paramLabel = "N", defaultValue = "3", description = "Dispatchers in this"
            + " process, 1-9 (one leads, the others stand by).")
    int dispatchers;
    @Option(names = "--partitions", paramLabel = "N", defaultValue = "6",
            description = "Partitions of the topic, if the demo creates it.")
    int partitions;
    @Option(names = "--topic", paramLabel = "NAME", defaultValue = "outbox-demo-orders",
            description = "Topic of the order events.")
    String topic;
    @Option(names = "--no-takeover", description = "Do not close the leader halfway through.")
    boolean noTakeover;
    @Option(names = "--drain-timeout", paramLabel = "D", defaultValue = "60s", converter = Time.class,
            description = "How long to wait for the last records after writing stops.")
    Duration drainTimeout;
    @Option(names = "--election", paramLabel = "HOW", description = "How the dispatchers"
            + " elect their leader: kafka (a consumer group over a leader topic) or database (a lease row in"
            + " Postgres). Default: kafka, or database with --broker rabbitmq.")
    String election;
    @Option(names = "--broker", paramLabel = "NAME", defaultValue = "kafka", description = "Where the outbox is"
            + " published: kafka (a topic) or rabbitmq (an exchange over --partitions single-active-consumer queues,"
            + " keeping each customer's order; needs --election database). Default: ${DEFAULT-VALUE}.")
    String broker;
    @Option(names = "--rabbitmq-uri", paramLabel = "URI", description = "An existing RabbitMQ node, amqp://user@host:"
            + "5672/vhost (environment OUTBOX_DEMO_RABBITMQ_URI; a password in it is never printed). Default: Debian's"
            + " rabbitmq-server started as a node of the demo's own.")
    String rabbitMqUri;

    /** The command line; a usage error prints what is wrong and the nearest options, and exits with 2. */
    static CommandLine commandLine(DemoCommand command) {
        return new CommandLine(command).setParameterExceptionHandler((error, args) -> {
            var near = error instanceof CommandLine.UnmatchedArgumentException unmatched
                    ? unmatched.getSuggestions() : java.util.List.<String>of();
            error.getCommandLine().getErr().printf("%s%n%s./demo.sh --help lists the options.%n", error.getMessage(),
                    near.isEmpty() ? "" : "Did you mean " + String.join(" or ", near) + "? ");
            return CommandLine.ExitCode.USAGE;
        });
    }

    /**
     * The options, with server addresses the command line left out taken from {@code env}.
     *
     * @throws IllegalArgumentException naming an option whose value is out of range
     */
    DemoOptions options(Map<String, String> env) {
        if (postgresPasswordOnCommandLine != null) {
            throw new IllegalArgumentException("--postgres-password is not accepted: a password on a command line"
                    + " shows in ps and in shell history; put it in the environment variable " + PASSWORD_VARIABLE
                    + " or in a file named by --postgres-password-file");
        }
        String url = orEnv(postgresUrl, env, "OUTBOX_DEMO_POSTGRES_URL", null);
        if (url != null && URL_PASSWORD.matcher(url).find()) {
            throw new IllegalArgumentException("--postgres-url (or OUTBOX_DEMO_POSTGRES_URL) carries a password"
                    + " (a password= parameter or user:password@): the demo prints its URL; remove the password from"
                    + " it and put it in the environment variable " + PASSWORD_VARIABLE + " or in a file named by"
                    + " --postgres-password-file");
        }
        return new DemoOptions(
                url,
                orEnv(postgresUser, env, "OUTBOX_DEMO_POSTGRES_USER", "postgres"),
                password(env),
                orEnv(kafkaBootstrap, env, "OUTBOX_DEMO_KAFKA_BOOTSTRAP", null),
                duration, rate, writers, customers, dispatchers, partitions, topic, !noTakeover, drainTimeout,
                election != null ? election : "rabbitmq".equals(broker) ? "database" : "kafka", broker,
                orEnv(rabbitMqUri, env, "OUTBOX_DEMO_RABBITMQ_URI", null));
    }

    /** The first line of --postgres-password-file, else {@link #PASSWORD_VARIABLE}, else empty. */
    private String password(Map<String, String> env) {
        if (postgresPasswordFile == null) {
            return env.getOrDefault(PASSWORD_VARIABLE, "");
        }
        try {
            java.util.List<String> lines = java.nio.file.Files.readAllLines(postgresPasswordFile,
                    StandardCharsets.UTF_8);
            return lines.isEmpty() ? "" : lines.get(0);
        } catch (IOException e) {
            throw new IllegalArgumentException("--postgres-password-file " + postgresPasswordFile
                    + " cannot be read: " + e, e);
        }
    }

    private static String orEnv(String value, Map<String, String> env, String variable, String fallback) {
        String chosen = value != null ? value : env.getOrDefault(variable, fallback);
        return chosen == null || (fallback == null && chosen.isBlank()) ? null : chosen;
    }

    /** {@code 500ms}, {@code 20s}, {@code 2m}, or a plain number of seconds. */
    static final class Time implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            String v = value.trim().toLowerCase(Locale.ROOT);
            try {
                if (v.endsWith("ms")) {
                    return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
                }
                if (v.endsWith("m")) {
                    return Duration.ofMinutes(Long.parseLong(v.substring(0, v.length() - 1)));
                }
                return Duration.ofSeconds(Long.parseLong(v.endsWith("s") ? v.substring(0, v.length() - 1) : v));
            } catch (NumberFormatException e) {
                throw new CommandLine.TypeConversionException("expected a duration like 20s, 2m or 500ms, was '"
                        + value + "'");
            }
        }
    }

    /** The project's version, from the resource {@code demo-version.txt} that the build fills in. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws IOException {
            try (InputStream in = Version.class.getResourceAsStream("demo-version.txt")) {
                String version = in == null ? "unknown" : new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
                return new String[]{"Outbox for the JVM " + version + ", orders demo"};
            }
        }
    }
}
