package dev.outbox.testservers;

/**
 * One way of providing a Kafka broker (embedded, Docker, external): its life cycle and address. Called by
 * {@link DefaultKafkaServer} under its lock only; implementations need not be thread-safe.
 */
interface KafkaBackend {

    ServerMode mode();

    /** The Kafka version, or {@code "unknown"}. */
    String version();

    /** Starts the broker (the first time: creates its files); returns once it accepts clients. */
    void start();

    /** Stops the broker; does nothing if it is not running. */
    void stop();

    /** Stops for good at JVM exit. */
    void close();

    /** The bootstrap address, valid once started; constant across restarts. */
    String bootstrapServers();

    /** Extra words for the start log line, e.g. the data directory; may be empty. */
    String describe();

    /** How many brokers the cluster has. */
    default int brokers() {
        return 1;
    }

    /** The replication factor of topics created for tests. */
    default short replicationFactor() {
        return 1;
    }

    /** Stops ({@code running} false) or starts broker {@code index} (0-based) of a multi-broker cluster. */
    default void broker(int index, boolean running) {
        throw new UnsupportedOperationException("a " + mode() + " Kafka cannot stop or start single brokers");
    }
}
