package dev.outbox.testservers;

/** An existing Kafka cluster named by a system property. Immutable. */
final class ExternalKafkaBackend implements KafkaBackend {
    private final String bootstrap;

    ExternalKafkaBackend(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    @Override
    public ServerMode mode() {
        return ServerMode.EXTERNAL;
    }

    @Override
    public String version() {
        return "unknown";
    }

    @Override
    public void start() {
        // Already running.
    }

    @Override
    public void stop() {
        throw new UnsupportedOperationException("cannot stop the existing Kafka at " + bootstrap);
    }

    @Override
    public void close() {
        // Not ours.
    }

    @Override
    public String bootstrapServers() {
        return bootstrap;
    }

    @Override
    public String describe() {
        return "";
    }
}
