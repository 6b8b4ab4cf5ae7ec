package dev.outbox.testservers;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.testcontainers.kafka.KafkaContainer;

/**
 * Kafka in a Docker container ({@code apache/kafka}), started by Testcontainers, its client port bound to a fixed
 * host port so that {@link #stop()} (SIGKILL to the container) and {@link #start()} (the same container again,
 * which runs the same start script with the same advertised address) keep address and data.
 */
final class DockerKafkaBackend implements KafkaBackend {
    private final KafkaContainer container;
    private final int hostPort;
    private boolean created;

    DockerKafkaBackend(String image) {
        container = new KafkaContainer(image)
                .withEnv("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
                .withEnv("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false");
        hostPort = DockerServers.bindFixedPort(container, 9092);
    }

    @Override
    public ServerMode mode() {
        return ServerMode.DOCKER;
    }

    @Override
    public String version() {
        String image = container.getDockerImageName();
        return image.substring(image.lastIndexOf(':') + 1);
    }

    @Override
    public void start() {
        if (!created) {
            container.start();
            created = true;
            return;
        }
        DockerServers.restart(container);
        DockerServers.await("Kafka container", () -> {
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
                return admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
            }
        });
    }

    @Override
    public void stop() {
        if (created) {
            DockerServers.kill(container);
        }
    }

    @Override
    public void close() {
        container.stop();
    }

    @Override
    public String bootstrapServers() {
        return container.getHost() + ":" + hostPort;
    }

    @Override
    public String describe() {
        return "image " + container.getDockerImageName();
    }
}
