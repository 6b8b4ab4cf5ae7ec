package dev.outbox.testservers;

/**
 * A running Kafka cluster for tests (one broker): its bootstrap address, topics on demand and fault hooks.
 *
 * <p>The embedded broker does not create topics automatically (so tests can see what an unknown topic does):
 * create them with {@link #createTopic(String, int)}. Its internal topics have replication factor 1.
 *
 * <p>Implementations are thread-safe. {@link #stop()} and {@link #restart()} affect every test of the JVM that
 * shares the broker; tests that call them must not run in parallel with other tests using it.
 */
public interface KafkaServer {

    /** How this broker was provided. */
    ServerMode mode();

    /** The Kafka version of the broker, e.g. {@code 4.3.1}, as far as it can be known. */
    String version();

    /** The {@code bootstrap.servers} string for clients, e.g. {@code 127.0.0.1:40123}. */
    String bootstrapServers();

    /**
     * Creates the topic {@code name} with {@code partitions} partitions (replication factor 1) and waits until it
     * is usable. Does nothing if it exists with that many partitions.
     *
     * @throws IllegalArgumentException if {@code partitions < 1}, or the topic exists with another count
     */
    void createTopic(String name, int partitions);

    /**
     * Stops the broker; clients see a broker that is gone. Committed records are kept. The embedded broker shuts
     * down (its controller keeps running); a Docker broker is killed. Does nothing if it is already stopped.
     *
     * @throws UnsupportedOperationException if the broker is {@link ServerMode#EXTERNAL}
     */
    void stop();

    /**
     * Stops the broker if it runs, then starts it again with the same bootstrap address and data.
     *
     * @throws UnsupportedOperationException if the broker is {@link ServerMode#EXTERNAL}
     * @throws IllegalStateException if it cannot start again (for example, its port was taken meanwhile)
     */
    void restart();
}
