package dev.outbox.testservers;

import java.net.URI;

/**
 * A running RabbitMQ node for tests: its AMQP URI and fault hooks. {@link TestServers#rabbitMq()} starts Debian's
 * {@code rabbitmq-server} as a node of its own (node name, ports, data, logs and Erlang cookie under
 * {@code target/}), with the {@code rabbitmq_consistent_hash_exchange} plugin enabled; or uses an existing node
 * named by {@value TestServers#RABBITMQ_URI_PROPERTY} (system property) or {@value TestServers#RABBITMQ_URI_VARIABLE}
 * (environment variable).
 *
 * <p>Implementations are thread-safe. {@link #closeAllConnections()}, {@link #stop()} and {@link #restart()} affect
 * every test of the JVM that shares the node; tests that call them must not run in parallel with other tests using
 * it.
 */
public interface RabbitMqServer {

    /** How this node was provided: {@link ServerMode#EMBEDDED} (a child process) or {@link ServerMode#EXTERNAL}. */
    ServerMode mode();

    /** The RabbitMQ version of the node, e.g. {@code 3.10.8}, as far as it can be known. */
    String version();

    /**
     * The AMQP URI clients connect with, e.g. {@code amqp://guest:guest@127.0.0.1:40123/%2F}; it carries the
     * password, so do not log it (see {@link #toString()}).
     */
    URI uri();

    /**
     * Closes every client connection of the node ({@code rabbitmqctl close_all_connections}), in the middle of
     * whatever clients do; returns once the node has told each of them to close. Clients see the connection closed
     * by the broker ({@code CONNECTION_FORCED}) a moment later; the node finishes closing a connection once its
     * channels have finished with their queues.
     *
     * @return how many connections there were to close
     * @throws UnsupportedOperationException if the node is {@link ServerMode#EXTERNAL}
     */
    int closeAllConnections();

    /**
     * Runs {@code rabbitmqctl} against the node (its node name and Erlang cookie given), for what the other hooks
     * do not cover, e.g. {@code eval} to suspend a queue's process so that its confirms wait.
     *
     * @param arguments the command and its arguments, e.g. {@code "list_queues", "name"}
     * @return the command's output, trimmed
     * @throws IllegalStateException if the command fails (with its output) or takes more than 30 s
     * @throws UnsupportedOperationException if the node is {@link ServerMode#EXTERNAL}
     */
    String rabbitmqctl(String... arguments);

    /**
     * Stops the node (gracefully: {@code rabbitmqctl stop}); durable exchanges, queues and persistent messages are
     * kept. Does nothing if it is stopped.
     *
     * @throws UnsupportedOperationException if the node is {@link ServerMode#EXTERNAL}
     */
    void stop();

    /**
     * Stops the node if it runs, then starts it again with the same ports and data, and returns once it accepts
     * AMQP connections.
     *
     * @throws UnsupportedOperationException if the node is {@link ServerMode#EXTERNAL}
     * @throws IllegalStateException if it cannot start again within its timeout
     */
    void restart();

    /** What the node is and where, without the password. */
    @Override
    String toString();
}
