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
 * A KRaft cluster inside this JVM, built by Kafka's own {@link KafkaClusterTestKit} from the
 * {@code kafka-test-common-runtime} artifact, with the production metadata version: either one node (combined
 * broker and controller, replication factor 1) or three brokers and a separate controller, where every topic
 * (the internal ones too) has replication factor 3 and {@code min.insync.replicas=2}. Data under
 * {@code target/outbox-test-servers/<name>-<pid>}.
 *
 * <p>{@link #stop()} shuts the brokers down while the controller keeps running; {@link #start()} starts the same
 * brokers again on the same ports (the test kit rebinds them) with the same log directories;
 * {@link #broker(int, boolean)} does that to one broker of three. In the three-broker cluster a stopped broker is
 * lost without a controlled shutdown: it does not hand its partitions' leadership over first, the controller moves
 * it once the broker's session ({@code broker.session.timeout.ms}, 2 s) has expired.
 */
final class EmbeddedKafkaBackend implements KafkaBackend {
    private final Path directory;
    private final int brokers;
    private final boolean[] running;
    private KafkaClusterTestKit cluster;
    private String bootstrapServers;

    /** One combined broker and controller. */
    EmbeddedKafkaBackend() {
        this("kafka", 1);
    }

    /** {@code brokers} brokers (1, or 3 with a separate controller), files in {@code target/.../<name>-<pid>}. */
    EmbeddedKafkaBackend(String name, int brokers) {
        if (brokers != 1 && brokers != 3) {
            throw new IllegalArgumentException("an embedded Kafka has 1 or 3 brokers, not " + brokers);
        }
        this.directory = ServerFiles.instance(name);
        this.brokers = brokers;
        this.running = new boolean[brokers];
    }

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
            } else {
                for (int i = 0; i < brokers; i++) {
                    if (!running[i]) {
                        broker(i).startup();
                    }
                }
            }
            cluster.waitForReadyBrokers();
            java.util.Arrays.fill(running, true);
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
                .setCombined(brokers == 1)
                .setNumBrokerNodes(brokers)
                .setNumControllerNodes(1)
                .setBaseDirectory(directory)
                .build();
        String replicas = Short.toString(replicationFactor());
        String minIsr = brokers == 1 ? "1" : "2";
        KafkaClusterTestKit.Builder builder = new KafkaClusterTestKit.Builder(nodes);
        if (brokers > 1) {
            // A stopped broker of the cluster is lost as a crash loses it: it does not hand its partitions over
            // first; the controller moves their leadership when the broker's session expires.
            builder.setConfigProp("controlled.shutdown.enable", "false");
        }
        return builder
                .setDeleteOnClose(false)
                .setConfigProp("offsets.topic.replication.factor", replicas)
                .setConfigProp("offsets.topic.num.partitions", "5")
                .setConfigProp("transaction.state.log.replication.factor", replicas)
                .setConfigProp("transaction.state.log.min.isr", minIsr)
                .setConfigProp("default.replication.factor", replicas)
                .setConfigProp("min.insync.replicas", minIsr)
                .setConfigProp("transaction.state.log.num.partitions", "5")
                .setConfigProp("group.initial.rebalance.delay.ms", "0")
                .setConfigProp("auto.create.topics.enable", "false")
                // A restarted broker registers again only once its old session expired (default 9 s).
                .setConfigProp("broker.session.timeout.ms", "2000")
                .setConfigProp("broker.heartbeat.interval.ms", "500")
                // Kafka's default reserves 128 MiB of heap for the log cleaner; 2 MiB is the least it accepts.
                .setConfigProp("log.cleaner.dedupe.buffer.size", "2097152")
                .setConfigProp("unstable.api.versions.enable", "false")
                .setConfigProp("unstable.feature.versions.enable", "false")
                .build();
    }

    private BrokerServer broker(int index) {
        return new TreeMap<>(cluster.brokers()).values().stream().skip(index).findFirst().orElseThrow();
    }

    @Override
    public int brokers() {
        return brokers;
    }

    @Override
    public short replicationFactor() {
        return (short) brokers;
    }

    @Override
    public void broker(int index, boolean run) {
        if (index < 0 || index >= brokers) {
            throw new IllegalArgumentException("broker " + index + " does not exist: the cluster has brokers 0 to "
                    + (brokers - 1));
        }
        if (cluster == null) {
            throw new IllegalStateException("embedded Kafka in " + directory + " is not running");
        }
        if (run == running[index]) {
            return;
        }
        if (run) {
            broker(index).startup();
            running[index] = true;
            try {
                cluster.waitForReadyBrokers();
            } catch (ExecutionException | InterruptedException e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                throw new IllegalStateException("broker " + index + " did not start again: " + e, e);
            }
        } else {
            broker(index).shutdown();
            broker(index).awaitShutdown();
            running[index] = false;
        }
    }

    @Override
    public void stop() {
        if (cluster != null) {
            for (int i = 0; i < brokers; i++) {
                broker(i, false);
            }
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
                java.util.Arrays.fill(running, false);
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
