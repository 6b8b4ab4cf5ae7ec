package dev.outbox.testservers;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.LeaderNotAvailableException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link KafkaServer} over any {@link KafkaBackend}. Thread-safe: life-cycle calls are serialised by a lock. */
final class DefaultKafkaServer implements KafkaServer {
    private static final Logger LOG = LoggerFactory.getLogger(DefaultKafkaServer.class);
    private static final long TIMEOUT_SECONDS = 30;

    private final KafkaBackend backend;
    private final Object lock = new Object();
    private boolean running;

    private DefaultKafkaServer(KafkaBackend backend) {
        this.backend = backend;
    }

    /** Starts {@code backend} and logs what started and how long it took. */
    static DefaultKafkaServer start(KafkaBackend backend) {
        DefaultKafkaServer server = new DefaultKafkaServer(backend);
        long started = System.nanoTime();
        synchronized (server.lock) {
            backend.start();
            server.running = true;
        }
        String details = backend.describe();
        LOG.info("Kafka {} ({}) ready at {} in {} ms{}", backend.version(),
                backend.mode().name().toLowerCase(java.util.Locale.ROOT), backend.bootstrapServers(),
                (System.nanoTime() - started) / 1_000_000, details.isEmpty() ? "" : ", " + details);
        return server;
    }

    @Override
    public ServerMode mode() {
        return backend.mode();
    }

    @Override
    public String version() {
        return backend.version();
    }

    @Override
    public String bootstrapServers() {
        return backend.bootstrapServers();
    }

    @Override
    public void createTopic(String name, int partitions) {
        Objects.requireNonNull(name, "name");
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions of topic '" + name + "' must be at least 1, not "
                    + partitions);
        }
        try (Admin admin = Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
                AdminClientConfig.CLIENT_ID_CONFIG, "outbox-test-servers-admin"))) {
            try {
                admin.createTopics(Set.of(new NewTopic(name, partitions, backend.replicationFactor())))
                        .all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
            awaitLeaders(admin, name, partitions);
        } catch (ExecutionException e) {
            throw new IllegalStateException("cannot create topic '" + name + "' on " + bootstrapServers() + ": "
                    + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("creating topic '" + name + "' on " + bootstrapServers()
                    + " took more than " + TIMEOUT_SECONDS + " s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topic '" + name + "'", e);
        }
    }

    /** Waits until the topic has {@code partitions} partitions, each with a leader. */
    private static void awaitLeaders(Admin admin, String name, int partitions)
            throws ExecutionException, InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (true) {
            try {
                TopicDescription topic = admin.describeTopics(Set.of(name)).allTopicNames()
                        .get(TIMEOUT_SECONDS, TimeUnit.SECONDS).get(name);
                int actual = topic.partitions().size();
                if (actual != partitions) {
                    throw new IllegalArgumentException("topic '" + name + "' exists with " + actual
                            + " partitions, not " + partitions);
                }
                if (topic.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
                    // The controller knows the leaders; make sure the broker acts as leader of each partition
                    // too (ListOffsets is answered by the leader only), or a first produce may be refused with
                    // NOT_LEADER and confuse the idempotent producer's sequence numbers.
                    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
                    for (int i = 0; i < partitions; i++) {
                        latest.put(new TopicPartition(name, i), OffsetSpec.latest());
                    }
                    admin.listOffsets(latest).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                    return;
                }
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException
                        || e.getCause() instanceof NotLeaderOrFollowerException
                        || e.getCause() instanceof LeaderNotAvailableException)) {
                    throw e;
                }
            }
            if (System.nanoTime() - deadline > 0) {
                throw new TimeoutException("partitions of '" + name + "' have no leader");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }

    @Override
    public void stop() {
        requireManaged("stop");
        synchronized (lock) {
            if (running) {
                long t = System.nanoTime();
                backend.stop();
                running = false;
                LOG.info("Kafka stopped in {} ms", (System.nanoTime() - t) / 1_000_000);
            }
        }
    }

    @Override
    public void restart() {
        requireManaged("restart");
        synchronized (lock) {
            long t = System.nanoTime();
            if (running) {
                backend.stop();
                running = false;
            }
            backend.start();
            running = true;
            LOG.info("Kafka restarted at {} in {} ms", bootstrapServers(), (System.nanoTime() - t) / 1_000_000);
        }
    }

    @Override
    public int brokers() {
        return backend.brokers();
    }

    @Override
    public void stopBroker(int index) {
        singleBroker("stop", index, false);
    }

    @Override
    public void startBroker(int index) {
        singleBroker("start", index, true);
    }

    private void singleBroker(String what, int index, boolean run) {
        requireManaged(what + " a broker of");
        if (backend.brokers() == 1) {
            throw new UnsupportedOperationException("cannot " + what + " broker " + index + " of the one-broker Kafka"
                    + " at " + bootstrapServers() + ": use stop() and restart(), or TestServers.kafkaCluster()");
        }
        synchronized (lock) {
            long t = System.nanoTime();
            backend.broker(index, run);
            LOG.info("Kafka broker {} of {} {} in {} ms", index, backend.brokers(), run ? "started" : "stopped",
                    (System.nanoTime() - t) / 1_000_000);
        }
    }

    /** Stops the broker at JVM exit, quietly. */
    void shutdown() {
        synchronized (lock) {
            running = false;
            backend.close();
        }
    }

    private void requireManaged(String what) {
        if (mode() == ServerMode.EXTERNAL) {
            throw new UnsupportedOperationException("cannot " + what + " the existing Kafka at " + bootstrapServers()
                    + " (given by system property " + TestServers.KAFKA_BOOTSTRAP_PROPERTY
                    + "); run the test with embedded or docker servers");
        }
    }

    @Override
    public String toString() {
        return "Kafka " + version() + " (" + mode() + ") at " + bootstrapServers();
    }
}
