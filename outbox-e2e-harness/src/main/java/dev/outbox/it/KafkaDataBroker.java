package dev.outbox.it;

import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testservers.KafkaServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The reference path's data broker: a Kafka cluster. The data topic is created with its partitions and a
 * {@code max.message.bytes} (the broker refuses a larger record, permanently); a topic never created stays missing
 * (the brokers do not create topics); the watcher is a {@link TopicWatcher}, done once it reached the topic's end
 * offsets.
 */
final class KafkaDataBroker implements DataBroker {
    private final KafkaServer kafka;

    KafkaDataBroker(KafkaServer kafka) {
        this.kafka = kafka;
    }

    /** The cluster. */
    KafkaServer server() {
        return kafka;
    }

    @Override
    public String name() {
        return "Kafka";
    }

    @Override
    public void createTopic(String topic, int partitions, int maxMessageBytes) {
        kafka.createTopic(topic, partitions);
        limitMessageSize(topic, maxMessageBytes);
    }

    @Override
    public MessageBroker newBroker(String client, Duration deliveryTimeout, int maxMessageBytes) {
        // The topic's max.message.bytes is what refuses a larger record: the producer's own limit stays the default.
        return KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .deliveryTimeout(deliveryTimeout)
                .property("client.id", client)
                .build();
    }

    @Override
    public DataWatcher newWatcher(String topic) {
        return new TopicWatcher(kafka.bootstrapServers(), topic);
    }

    @Override
    public BooleanSupplier consumedAll(String topic, DataWatcher watcher) {
        long end = endOffsets(topic);
        return () -> watcher.records() >= end;
    }

    @Override
    public String kafkaBootstrap() {
        return kafka.bootstrapServers();
    }

    private Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()));
    }

    private void limitMessageSize(String topicName, int bytes) {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topicName);
        try (Admin admin = admin()) {
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("max.message.bytes", Integer.toString(bytes)), AlterConfigOp.OpType.SET))))
                    .all().get(30, TimeUnit.SECONDS);
            Scenario.await(() -> {
                try {
                    ConfigEntry e = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS)
                            .get(resource).get("max.message.bytes");
                    return e != null && Integer.toString(bytes).equals(e.value());
                } catch (Exception ex) {
                    return false;
                }
            }, Scenario.WAIT, () -> "max.message.bytes of " + topicName + " set to " + bytes);
        } catch (Exception e) {
            throw new IllegalStateException("could not limit the message size of " + topicName, e);
        }
    }

    /** The sum of the end offsets of {@code topic}'s partitions: every record written to it. */
    private long endOffsets(String topic) {
        try (Admin admin = admin()) {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic);
            Map<TopicPartition, OffsetSpec> request = new HashMap<>();
            d.partitions().forEach(p -> request.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> offsets = admin.listOffsets(request).all()
                    .get(30, TimeUnit.SECONDS);
            return offsets.values().stream().mapToLong(ListOffsetsResult.ListOffsetsResultInfo::offset).sum();
        } catch (Exception e) {
            throw new IllegalStateException("could not read the end offsets of " + topic, e);
        }
    }
}
