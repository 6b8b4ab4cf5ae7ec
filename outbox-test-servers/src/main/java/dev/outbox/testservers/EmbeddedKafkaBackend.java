package dev.outbox.testservers;

import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import kafka.server.BrokerServer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.metadata.bootstrap.BootstrapMetadata;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A single-node KRaft cluster (combined broker and controller, replication factor 1) inside this JVM, built by
 * Kafka's own {@link KafkaClusterTestKit} from the {@code kafka-test-common-runtime} artifact, with the production
 * metadata version, listening on the loopback address only ({@link LoopbackListeners}). Data under
 * {@code target/outbox-test-servers/kafka-<pid>}. (The three-broker cluster runs its
 * nodes as child JVMs, so that a broker can be killed: {@link ProcessKafkaClusterBackend}.)
 *
 * <p>{@link #stop()} shuts the broker down while its controller keeps running; {@link #start()} starts the same
 * broker again on the same port (the test kit rebinds it) with the same log directory.
 */
final class EmbeddedKafkaBackend implements KafkaBackend {
    private final Path directory = ServerFiles.instance("kafka");
    private KafkaClusterTestKit cluster;
    private boolean brokerRunning;
    private String bootstrapServers;

    @Override
    public ServerMode mode() {
        return ServerMode.EMBEDDED;
    }

    @Override
    public String version() {
        return AppInfoParser.getVersion();
    }

    @Override
    public void start() {
        try {
            if (cluster == null) {
                cluster = newCluster();
                try {
                    cluster.format();
                    cluster.startup();
                } catch (Exception e) {
                    closeQuietly();
                    throw e;
                }
            } else if (!brokerRunning) {
                broker().startup();
            }
            cluster.waitForReadyBrokers();
            brokerRunning = true;
            if (bootstrapServers == null) {
                bootstrapServers = cluster.bootstrapServers();
            }
        } catch (ExecutionException e) {
            throw new IllegalStateException("embedded Kafka did not start in " + directory + ": " + e.getCause(),
                    e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting embedded Kafka", e);
        } catch (Exception e) {
            throw new IllegalStateException("embedded Kafka did not start in " + directory + ": " + e, e);
        }
    }

    private KafkaClusterTestKit newCluster() throws Exception {
        MetadataVersion version = MetadataVersion.latestProduction();
        Map<String, Short> features = Feature.PRODUCTION_FEATURES.stream().collect(Collectors.toMap(
                Feature::featureName, f -> f.defaultLevel(version), (a, b) -> a, TreeMap::new));
        TestKitNodes nodes = new TestKitNodes.Builder(BootstrapMetadata.fromVersions(version, features, "outbox"))
                .setCombined(true)
                .setNumBrokerNodes(1)
                .setNumControllerNodes(1)
                .setBaseDirectory(directory)
                .build();
        KafkaClusterTestKit.Builder builder = new KafkaClusterTestKit.Builder(nodes)
                .setDeleteOnClose(false)
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("offsets.topic.num.partitions", "5")
                .setConfigProp("transaction.state.log.replication.factor", "1")
                .setConfigProp("transaction.state.log.min.isr", "1")
                .setConfigProp("transaction.state.log.num.partitions", "5")
                .setConfigProp("group.initial.rebalance.delay.ms", "0")
                .setConfigProp("auto.create.topics.enable", "false")
                // A restarted broker registers again only once its old session expired (default 9 s).
                .setConfigProp("broker.session.timeout.ms", "2000")
                .setConfigProp("broker.heartbeat.interval.ms", "500")
                // Kafka's default reserves 128 MiB of heap for the log cleaner; 2 MiB is the least it accepts.
                .setConfigProp("log.cleaner.dedupe.buffer.size", "2097152")
                .setConfigProp("unstable.api.versions.enable", "false")
                .setConfigProp("unstable.feature.versions.enable", "false");
        // On 127.0.0.1 only: the test kit would bind the listeners to every interface.
        LoopbackListeners.bind(builder, nodes);
        return builder.build();
    }

    private BrokerServer broker() {
        return cluster.brokers().values().iterator().next();
    }

    @Override
    public void stop() {
        if (cluster != null && brokerRunning) {
            broker().shutdown();
            broker().awaitShutdown();
            brokerRunning = false;
        }
    }

    @Override
    public void close() {
        if (cluster != null) {
            try {
                cluster.close();
            } catch (Exception e) {
                throw new IllegalStateException("cannot stop embedded Kafka: " + e, e);
            } finally {
                cluster = null;
                brokerRunning = false;
            }
        }
    }

    private void closeQuietly() {
        try {
            close();
        } catch (RuntimeException suppressed) {
            // The start failure is what matters.
        }
    }

    @Override
    public String bootstrapServers() {
        return bootstrapServers;
    }

    @Override
    public String describe() {
        return "files in " + directory;
    }
}
