package dev.outbox.testservers;

/** Placeholder until the Kafka backends exist: every method throws. */
final class DefaultKafkaServer implements KafkaServer {
    private DefaultKafkaServer() {
    }

    @Override
    public ServerMode mode() {
        throw new UnsupportedOperationException("Kafka is not implemented yet");
    }

    @Override
    public String version() {
        throw new UnsupportedOperationException("Kafka is not implemented yet");
    }

    @Override
    public String bootstrapServers() {
        throw new UnsupportedOperationException("Kafka is not implemented yet");
    }

    @Override
    public void createTopic(String name, int partitions) {
        throw new UnsupportedOperationException("Kafka is not implemented yet");
    }

    @Override
    public void stop() {
        throw new UnsupportedOperationException("Kafka is not implemented yet");
    }

    @Override
    public void restart() {
        throw new UnsupportedOperationException("Kafka is not implemented yet");
    }

    void shutdown() {
    }
}
