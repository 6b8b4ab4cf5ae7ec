package dev.outbox.examples;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The demo's settings, from command-line flags, then environment variables, then defaults. Immutable.
 *
 * @param postgresUrl      JDBC URL of an existing Postgres, or null to start an embedded one
 * @param postgresUser     user for {@code postgresUrl}
 * @param postgresPassword password for {@code postgresUrl}
 * @param kafkaBootstrap   {@code bootstrap.servers} of an existing Kafka, or null to start one in this process
 * @param duration         how long the writers place orders
 * @param rate             orders per second, all writers together; 0 means as fast as they can
 * @param writers          writer threads
 * @param customers        distinct customers, which are the message keys
 * @param dispatchers      dispatchers in the process (one leads, the others stand by)
 * @param partitions       partitions of the orders topic, if the demo creates it
 * @param topic            the topic order events are published to
 * @param takeover         whether to close the leader halfway through
 * @param drainTimeout     how long to wait, after the writers stopped, for every record to arrive
 */
public record DemoOptions(String postgresUrl, String postgresUser, String postgresPassword, String kafkaBootstrap,
                          Duration duration, int rate, int writers, int customers, int dispatchers, int partitions,
                          String topic, boolean takeover, Duration drainTimeout) {

    /** The usage text printed by {@code --help}. */
    public static final String USAGE = String.join("\n",
            "Usage: ./demo.sh [options]",
            "",
            "Runs a small orders service on a Postgres outbox, three dispatchers electing a leader over Kafka, and a",
            "consumer that checks every order event arrived in per-key order. Embedded servers unless told otherwise.",
            "",
            "  --postgres-url URL       existing Postgres (env OUTBOX_DEMO_POSTGRES_URL); default: embedded PostgreSQL 17",
            "  --postgres-user USER     (env OUTBOX_DEMO_POSTGRES_USER, default postgres)",
            "  --postgres-password PW   (env OUTBOX_DEMO_POSTGRES_PASSWORD, default empty)",
            "  --kafka-bootstrap HOSTS  existing Kafka (env OUTBOX_DEMO_KAFKA_BOOTSTRAP); default: in-process Kafka 4.3.1",
            "  --duration D             how long orders are placed, e.g. 20s, 2m (default 20s)",
            "  --rate N                 orders per second, all writers together; 0 = flat out (default 1000)",
            "  --writers N              writer threads (default 4)",
            "  --customers N            distinct customers = message keys (default 1000)",
            "  --dispatchers N          dispatchers in this process, 1-9 (default 3)",
            "  --partitions N           partitions of the topic, if the demo creates it (default 6)",
            "  --topic NAME             topic of the order events (default outbox-demo-orders)",
            "  --no-takeover            do not close the leader halfway through",
            "  --drain-timeout D        how long to wait for the last records after writing stops (default 60s)",
            "",
            "On an existing Postgres the demo works in the schema outbox_demo; on an existing Kafka it creates the",
            "topic if missing and only counts records of its own run.",
            "Exit code: 0 when every order event arrived in order, 1 when one is missing or out of order,",
            "2 for bad options, 3 when the demo could not run.");

    private static final Set<String> VALUED = Set.of("--postgres-url", "--postgres-user", "--postgres-password",
            "--kafka-bootstrap", "--duration", "--rate", "--writers", "--customers", "--dispatchers", "--partitions",
            "--topic", "--drain-timeout");

    public DemoOptions {
        positive("--writers", writers);
        positive("--customers", customers);
        positive("--partitions", partitions);
        if (dispatchers < 1 || dispatchers > 9) {
            throw new IllegalArgumentException("--dispatchers must be between 1 and 9, was " + dispatchers);
        }
        if (rate < 0) {
            throw new IllegalArgumentException("--rate must not be negative, was " + rate);
        }
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException("--duration must be positive, was " + duration);
        }
        if (drainTimeout.isNegative() || drainTimeout.isZero()) {
            throw new IllegalArgumentException("--drain-timeout must be positive, was " + drainTimeout);
        }
        if (topic == null || topic.isBlank()) {
            throw new IllegalArgumentException("--topic must not be blank: '" + topic + "'");
        }
    }

    /** The defaults: embedded servers, 20 s at 1,000 orders/s by 4 writers over 1,000 customers, 3 dispatchers. */
    public static DemoOptions defaults() {
        return parse(new String[0], Map.of());
    }

    /**
     * Reads flags ({@code --name value} or {@code --name=value}), falling back to the environment for server
     * addresses.
     *
     * @throws IllegalArgumentException naming the flag and the bad value
     */
    public static DemoOptions parse(String[] args, Map<String, String> env) {
        String postgresUrl = env.get("OUTBOX_DEMO_POSTGRES_URL");
        String postgresUser = env.getOrDefault("OUTBOX_DEMO_POSTGRES_USER", "postgres");
        String postgresPassword = env.getOrDefault("OUTBOX_DEMO_POSTGRES_PASSWORD", "");
        String kafkaBootstrap = env.get("OUTBOX_DEMO_KAFKA_BOOTSTRAP");
        Duration duration = Duration.ofSeconds(20);
        int rate = 1000;
        int writers = 4;
        int customers = 1000;
        int dispatchers = 3;
        int partitions = 6;
        String topic = "outbox-demo-orders";
        boolean takeover = true;
        Duration drainTimeout = Duration.ofSeconds(60);

        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            String value = null;
            int eq = flag.indexOf('=');
            if (flag.startsWith("--") && eq > 0) {
                value = flag.substring(eq + 1);
                flag = flag.substring(0, eq);
            }
            if (flag.equals("--no-takeover")) {
                takeover = false;
                continue;
            }
            if (!VALUED.contains(flag)) {
                throw new IllegalArgumentException("unknown option '" + flag + "' (see --help)");
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("option " + flag + " needs a value");
                }
                value = args[++i];
            }
            switch (flag) {
                case "--postgres-url" -> postgresUrl = value;
                case "--postgres-user" -> postgresUser = value;
                case "--postgres-password" -> postgresPassword = value;
                case "--kafka-bootstrap" -> kafkaBootstrap = value;
                case "--duration" -> duration = duration(flag, value);
                case "--rate" -> rate = integer(flag, value);
                case "--writers" -> writers = integer(flag, value);
                case "--customers" -> customers = integer(flag, value);
                case "--dispatchers" -> dispatchers = integer(flag, value);
                case "--partitions" -> partitions = integer(flag, value);
                case "--topic" -> topic = value;
                case "--drain-timeout" -> drainTimeout = duration(flag, value);
                default -> throw new IllegalArgumentException("unknown option '" + flag + "' (see --help)");
            }
        }
        return new DemoOptions(blankToNull(postgresUrl), postgresUser, postgresPassword, blankToNull(kafkaBootstrap),
                duration, rate, writers, customers, dispatchers, partitions, topic, takeover, drainTimeout);
    }

    /** Parses {@code 500ms}, {@code 20s}, {@code 2m}, or a plain number of seconds. */
    static Duration duration(String flag, String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        Map<String, Function<Long, Duration>> units = Map.of("ms", Duration::ofMillis, "s", Duration::ofSeconds,
                "m", Duration::ofMinutes);
        for (String unit : new String[]{"ms", "s", "m"}) {
            if (v.endsWith(unit)) {
                return units.get(unit).apply(number(flag, value, v.substring(0, v.length() - unit.length())));
            }
        }
        return Duration.ofSeconds(number(flag, value, v));
    }

    private static long number(String flag, String value, String digits) {
        try {
            return Long.parseLong(digits.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option " + flag + " expects a duration like 20s, 2m or 500ms, was '"
                    + value + "'");
        }
    }

    private static int integer(String flag, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option " + flag + " expects a whole number, was '" + value + "'");
        }
    }

    private static void positive(String flag, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(flag + " must be at least 1, was " + value);
        }
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s;
    }
}
