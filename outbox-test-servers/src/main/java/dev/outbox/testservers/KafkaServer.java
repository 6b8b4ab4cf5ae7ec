package dev.outbox.testservers;

/**
 * A running Kafka cluster for tests: its bootstrap address, topics on demand and fault hooks.
 * {@link TestServers#kafka()} has one broker, and topics with replication factor 1;
 * {@link TestServers#kafkaCluster()} has three, and every topic (the internal ones too) has replication factor 3
 * and {@code min.insync.replicas=2}, so that a producer with {@code acks=all} goes on when one broker is lost.
 *
 * <p>The embedded brokers do not create topics automatically (so tests can see what an unknown topic does):
 * create them with {@link #createTopic(String, int)}.
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
     * Creates the topic {@code name} with {@code partitions} partitions (replication factor 1, or 3 on the
     * three-broker cluster) and waits until it
     * is usable. Does nothing if it exists with that many partitions.
     *
     * @throws IllegalArgumentException if {@code partitions < 1}, or the topic exists with another count
     */
    void createTopic(String name, int partitions);

    /**
     * Stops the broker; clients see a broker that is gone. Committed records are kept. The embedded broker shuts
     * down (its controller keeps running); a Docker broker is killed, and so are the three brokers of
     * {@link TestServers#kafkaCluster()} (SIGKILL; the controller keeps running). Does nothing if it is already
     * stopped.
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

    /** How many brokers the cluster has: 1, or 3 for {@link TestServers#kafkaCluster()}. */
    int brokers();

    /**
     * Kills broker {@code index} (0 to {@link #brokers()} - 1, the broker's node id) of a multi-broker cluster with
     * SIGKILL, in the middle of whatever clients do: no controlled shutdown, no flush, its connections reset. Once
     * its session with the controller has expired (2 s) the controller fences it, moves the leadership of its
     * partitions to the other replicas and removes it from the partitions' in-sync replicas; until then a producer
     * with {@code acks=all} waits on every partition that still lists it in sync. Returns once the process has
     * exited. Does nothing if it is stopped.
     *
     * @throws IllegalArgumentException if there is no such broker
     * @throws UnsupportedOperationException if the cluster has one broker (use {@link #stop()}) or is not embedded
     */
    void stopBroker(int index);

    /**
     * Starts a {@linkplain #stopBroker(int) killed} broker again on the same port with the same data (it recovers
     * its log as after a crash) and returns once it has caught up and is back in the in-sync replicas of every
     * partition it holds. Does nothing if it runs.
     *
     * @throws IllegalArgumentException if there is no such broker
     * @throws UnsupportedOperationException if the cluster has one broker or is not embedded
     */
    void startBroker(int index);
}
