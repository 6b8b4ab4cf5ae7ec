package dev.outbox.examples;

import java.time.Duration;
import java.util.Map;

/**
 * The demo's settings, from command-line options (parsed by picocli, see {@link DemoCommand}), then environment
 * variables, then defaults. Immutable.
 *
 * @param postgresUrl      JDBC URL of an existing Postgres, or null to start an embedded one
 * @param postgresUser     user for {@code postgresUrl}
 * @param postgresPassword password for {@code postgresUrl}; {@link #toString()} shows {@code ***} for it
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
 * @param election         how the dispatchers elect their leader: {@code kafka} (a consumer group over a leader
 *                         topic) or {@code database} (a lease row in Postgres, {@code SqlLeaderTransport})
 * @param broker           where the outbox is published: {@code kafka} (a topic) or {@code rabbitmq} (an exchange of
 *                         the per-key topology, {@code partitions} queues); RabbitMQ needs the {@code database}
 *                         election
 * @param rabbitMqUri      AMQP URI of an existing RabbitMQ node, or null to start one (Debian's
 *                         {@code rabbitmq-server}, as the tests do); {@link #toString()} hides its password
 */
public record DemoOptions(String postgresUrl, String postgresUser, String postgresPassword, String kafkaBootstrap,
                          Duration duration, int rate, int writers, int customers, int dispatchers, int partitions,
                          String topic, boolean takeover, Duration drainTimeout, String election, String broker,
                          String rabbitMqUri) {

    /** The options on Kafka. */
    public DemoOptions(String postgresUrl, String postgresUser, String postgresPassword, String kafkaBootstrap,
                       Duration duration, int rate, int writers, int customers, int dispatchers, int partitions,
                       String topic, boolean takeover, Duration drainTimeout, String election) {
        this(postgresUrl, postgresUser, postgresPassword, kafkaBootstrap, duration, rate, writers, customers,
                dispatchers, partitions, topic, takeover, drainTimeout, election, "kafka", null);
    }

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
        if (!"kafka".equals(election) && !"database".equals(election)) {
            throw new IllegalArgumentException("--election must be kafka or database, was '" + election + "'");
        }
        if (!"kafka".equals(broker) && !"rabbitmq".equals(broker)) {
            throw new IllegalArgumentException("--broker must be kafka or rabbitmq, was '" + broker + "'");
        }
        if ("rabbitmq".equals(broker) && !"database".equals(election)) {
            throw new IllegalArgumentException("--broker rabbitmq needs --election database (a lease in Postgres):"
                    + " the kafka election is a consumer group, and there is no Kafka");
        }
        if (topic == null || topic.isBlank()) {
            throw new IllegalArgumentException("--topic must not be blank: '" + topic + "'");
        }
    }

    /** All settings, the password shown as {@code ***} (or empty if there is none). */
    @Override
    public String toString() {
        return "DemoOptions[postgresUrl=" + postgresUrl + ", postgresUser=" + postgresUser + ", postgresPassword="
                + (postgresPassword == null || postgresPassword.isEmpty() ? "" : "***") + ", kafkaBootstrap="
                + kafkaBootstrap + ", duration=" + duration + ", rate=" + rate + ", writers=" + writers
                + ", customers=" + customers + ", dispatchers=" + dispatchers + ", partitions=" + partitions
                + ", topic=" + topic + ", takeover=" + takeover + ", drainTimeout=" + drainTimeout + ", election=" + election
                + ", broker=" + broker + ", rabbitMqUri=" + (rabbitMqUri == null ? null
                : rabbitMqUri.replaceFirst("//([^/@:]*):[^/@]*@", "//$1:***@")) + "]";
    }

    /** The defaults: embedded servers, 20 s at 1,000 orders/s by 4 writers over 1,000 customers, 3 dispatchers. */
    public static DemoOptions defaults() {
        return parse(new String[0], Map.of());
    }

    /**
     * Reads the command line ({@code --name value} or {@code --name=value}; {@code ./demo.sh --help} lists the
     * options), falling back to {@code env} for server addresses.
     *
     * @throws picocli.CommandLine.ParameterException naming the option and the bad value
     * @throws IllegalArgumentException naming the option whose value is out of range
     */
    public static DemoOptions parse(String[] args, Map<String, String> env) {
        DemoCommand command = new DemoCommand();
        DemoCommand.commandLine(command).parseArgs(args);
        return command.options(env);
    }

    private static void positive(String flag, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(flag + " must be at least 1, was " + value);
        }
    }

}
