package dev.outbox.broker.kafka;

import dev.outbox.OutboxException;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The Kafka side of a leader group, shared by {@link KafkaLeaderTransport} (one leader partition) and
 * {@link KafkaShardedLeaderTransport} (one partition per shard): the leader topic's check and creation, the group
 * consumer with its rebalance callbacks, and the heartbeat producer. It tracks which of the partitions it uses
 * (0 to {@code partitions - 1}) this member owns and reports only changes: a partition newly owned (after a seek
 * to its end, so that older heartbeats are never taken for fresh ones), an owned one revoked or lost, and the
 * heartbeats read from an owned one. Partitions beyond those it uses are ignored.
 *
 * <p>Thread-safety: {@link #start}, {@link #poll}, {@link #close} and {@link #abandon} are called from one thread
 * (the polling thread), and every listener callback runs on it from inside {@link #poll}. {@link #publish} and
 * {@link #owned()} are safe from any thread.
 */
final class LeaderGroup {
    private static final Logger log = LoggerFactory.getLogger(LeaderGroup.class);
    static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration TOPIC_RECHECK = Duration.ofSeconds(5);

    /** The validated configuration a {@link LeaderGroupBuilder} produces; immutable. */
    record Settings(String topic, String groupId, boolean createTopic, Optional<Short> replicationFactor,
                    Duration closeTimeout, Map<String, Object> consumerConfig, Map<String, Object> producerConfig,
                    Map<String, Object> adminConfig, Duration sessionTimeout, Duration maxPollInterval,
                    Duration heartbeatInterval) {
        Settings {
            consumerConfig = Map.copyOf(consumerConfig);
            producerConfig = Map.copyOf(producerConfig);
            adminConfig = Map.copyOf(adminConfig);
        }
    }

    private final Settings settings;
    private final int partitions;
    private final boolean exactPartitionCount;
    private final String what;

    private Consumer<byte[], byte[]> consumer;
    private volatile Producer<byte[], byte[]> producer;
    private ShardedLeaderTransport.Listener listener;
    /** The partitions (of those used) this member owns; replaced, never changed in place. */
    private volatile Set<Integer> owned = Set.of();
    private volatile boolean closed;
    private boolean inPoll;
    /** A reconfirmation was asked for ({@link #reconfirm()}); the next poll starts it. */
    private volatile boolean reconfirmRequested;
    /** A rejoin to reconfirm the owned partitions is under way; its completed rebalance answers. Polling thread. */
    private boolean confirming;
    private boolean topicConfirmed;
    private long nextTopicCheck = System.nanoTime();
    private RuntimeException callbackFailure;

    /**
     * @param partitions          how many partitions of the topic are used (0 to {@code partitions - 1}); a missing
     *                            topic is created with that many
     * @param exactPartitionCount whether an existing topic must have exactly that many (else at least one)
     * @param what                what the group elects, for messages ("leader", "shard leader")
     */
    LeaderGroup(Settings settings, int partitions, boolean exactPartitionCount, String what) {
        this.settings = settings;
        this.partitions = partitions;
        this.exactPartitionCount = exactPartitionCount;
        this.what = what;
    }

    Settings settings() {
        return settings;
    }

    /** The partitions this member owns now, of those used; safe from any thread. */
    Set<Integer> owned() {
        return owned;
    }

    /**
     * Ensures the topic exists (with the right partition count), creates the clients and subscribes. If Kafka
     * cannot be reached, the topic check is repeated from {@link #poll} every 5 s while the consumer keeps trying
     * to join: a dispatcher may start before Kafka does.
     *
     * @throws OutboxException if the topic is missing and must not be created, cannot be created for a reason that
     *                         will not pass (not authorized, ...), or has the wrong number of partitions
     */
    void start(ShardedLeaderTransport.Listener listener) {
        Objects.requireNonNull(listener, "listener");
        if (this.listener != null) {
            throw new IllegalStateException("Kafka " + what + " transport for topic '" + settings.topic()
                    + "' already started");
        }
        if (closed) {
            throw new IllegalStateException("Kafka " + what + " transport for topic '" + settings.topic()
                    + "' is closed");
        }
        this.listener = listener;
        checkTopicIfDue();
        try {
            producer = new KafkaProducer<>(settings.producerConfig(), new ByteArraySerializer(),
                    new ByteArraySerializer());
            consumer = new KafkaConsumer<>(settings.consumerConfig(), new ByteArrayDeserializer(),
                    new ByteArrayDeserializer());
        } catch (KafkaException e) {
            closeClients();
            throw new OutboxException("Kafka rejected the " + what + " transport's configuration: " + e.getMessage(),
                    e);
        }
        consumer.subscribe(List.of(settings.topic()), new RebalanceListener());
        log.info("joined {} group '{}' on topic '{}' (session timeout {} ms, max poll interval {} ms)", what,
                settings.groupId(), settings.topic(), settings.sessionTimeout().toMillis(),
                settings.maxPollInterval().toMillis());
    }

    /**
     * Checks the topic now if it was not confirmed yet and a check is due. A Kafka that cannot be reached is not an
     * error here: the consumer keeps trying to join, and the check is repeated every {@link #TOPIC_RECHECK}.
     */
    private void checkTopicIfDue() {
        if (topicConfirmed || System.nanoTime() - nextTopicCheck < 0) {
            return;
        }
        try {
            ensureTopic();
            topicConfirmed = true;
        } catch (TopicCheckUnavailable e) {
            nextTopicCheck = System.nanoTime() + TOPIC_RECHECK.toNanos();
            log.warn("could not check the {} topic '{}' ({}); will try again in {} s", what, settings.topic(),
                    e.getMessage(), TOPIC_RECHECK.toSeconds());
        }
    }

    private void ensureTopic() {
        String topic = settings.topic();
        try (Admin admin = Admin.create(settings.adminConfig())) {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic),
                                new DescribeTopicsOptions().timeoutMs((int) ADMIN_TIMEOUT.toMillis()))
                        .allTopicNames().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(topic);
                if (d != null) {
                    checkPartitionCount(d.partitions().size());
                }
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw failedCheck("could not check the " + what + " topic '" + topic + "'", e.getCause());
                }
            }
            if (!settings.createTopic()) {
                throw new OutboxException(what + " topic '" + topic + "' does not exist; create it with "
                        + (exactPartitionCount ? "exactly " + partitions + " partition(s)" : "one partition")
                        + " or allow the transport to create it");
            }
            NewTopic t = new NewTopic(topic, Optional.of(partitions), settings.replicationFactor())
                    .configs(Map.of("cleanup.policy", "delete", "retention.ms", "3600000", "segment.ms", "3600000"));
            try {
                admin.createTopics(List.of(t), new CreateTopicsOptions().timeoutMs((int) ADMIN_TIMEOUT.toMillis()))
                        .all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                log.info("created {} topic '{}' with {} partition(s)", what, topic, partitions);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw failedCheck(what + " topic '" + topic + "' does not exist and could not be created",
                            e.getCause());
                }
                // Another member created it at the same time: check what it created.
                ensureTopic();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TopicCheckUnavailable("interrupted", e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TopicCheckUnavailable("Kafka did not answer within " + ADMIN_TIMEOUT, e);
        } catch (KafkaException e) {
            throw new OutboxException("could not check the " + what + " topic '" + topic + "': " + e.getMessage(),
                    e);
        }
    }

    private void checkPartitionCount(int found) {
        if (exactPartitionCount && found != partitions) {
            throw new OutboxException(what + " topic '" + settings.topic() + "' has " + found + " partition(s) but "
                    + partitions + " shard(s) are configured: the topic needs exactly one partition per shard."
                    + " Use a topic (and group) of its own for this shard count, or change the shard count back"
                    + " to " + found);
        }
        if (!exactPartitionCount && found > partitions) {
            log.info("{} topic '{}' has {} partitions; only partition 0 is used", what, settings.topic(), found);
        }
    }

    /** Retriable causes (Kafka unreachable, timeouts) may pass; anything else (not authorized, ...) will not. */
    private static RuntimeException failedCheck(String message, Throwable cause) {
        if (cause instanceof RetriableException) {
            return new TopicCheckUnavailable(message + ": " + cause, cause);
        }
        return new OutboxException(message + ": " + cause, cause);
    }

    /** The topic could not be checked for a reason that may pass. */
    private static final class TopicCheckUnavailable extends OutboxException {
        private static final long serialVersionUID = 1L;

        TopicCheckUnavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Polls the group consumer once: rebalance callbacks and heartbeats of owned partitions go to the listener.
     * Returns at once, with the thread's interrupt flag set, if the thread was interrupted.
     *
     * @throws OutboxException      if polling failed, or the topic check failed for good
     * @throws RuntimeException     what a listener callback threw
     */
    void poll(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (consumer == null) {
            throw new IllegalStateException("Kafka " + what + " transport for topic '" + settings.topic()
                    + "' not started");
        }
        checkTopicIfDue();
        if (reconfirmRequested) {
            reconfirmRequested = false;
            try {
                consumer.enforceRebalance("outbox: a leader's lease lapsed; confirming its assignment");
                confirming = true;
                log.info("{} group '{}': rejoining to confirm the partitions owned ({}) after a lapsed lease", what,
                        settings.groupId(), owned);
            } catch (RuntimeException e) {
                log.warn("{} group '{}': could not start a rejoin to confirm the partitions owned", what,
                        settings.groupId(), e);
                confirming = true; // the next completed rebalance (the session's own) confirms instead
            }
        }
        ConsumerRecords<byte[], byte[]> records;
        callbackFailure = null;
        inPoll = true;
        try {
            records = consumer.poll(timeout);
        } catch (InterruptException e) {
            // Kafka has restored the thread's interrupt flag; the dispatcher sees it and stops.
            return;
        } catch (KafkaException e) {
            RuntimeException fromListener = callbackFailure;
            callbackFailure = null;
            if (fromListener != null) {
                throw fromListener;
            }
            throw new OutboxException("polling the " + what + " group '" + settings.groupId() + "' failed: "
                    + e.getMessage(), e);
        } finally {
            inPoll = false;
        }
        if (records.isEmpty()) {
            return;
        }
        Set<Integer> mine = owned;
        for (ConsumerRecord<byte[], byte[]> r : records) {
            if (!mine.contains(r.partition())) {
                continue;
            }
            Heartbeat hb = HeartbeatCodec.decode(r.value());
            if (hb == null) {
                log.debug("ignoring a record on {} topic '{}' at {}:{} that is not a heartbeat", what,
                        settings.topic(), r.partition(), r.offset());
                continue;
            }
            listener.heartbeat(r.partition(), hb);
        }
    }

    /**
     * Asks for the owned partitions to be confirmed by the group: the next {@link #poll} rejoins
     * ({@code enforceRebalance}; with the cooperative assignor nothing moves unless the group moved on already), and
     * the rebalance it completes tells the listener {@code confirmed} with the partitions still owned, after any
     * {@code lost} or {@code revoked}. Thread-safe.
     *
     * @return true: the answer comes from a later poll
     */
    boolean reconfirm() {
        reconfirmRequested = true;
        return true;
    }

    /**
     * Sends a heartbeat to {@code partition}, asynchronously; a heartbeat that fails is simply lost. Safe from any
     * thread (the producer is).
     */
    void publish(int partition, Heartbeat heartbeat) {
        Objects.requireNonNull(heartbeat, "heartbeat");
        Producer<byte[], byte[]> p = producer;
        if (p == null || closed) {
            return;
        }
        try {
            p.send(new ProducerRecord<>(settings.topic(), partition, null, HeartbeatCodec.encode(heartbeat)),
                    (md, e) -> {
                        if (e != null) {
                            log.debug("heartbeat {} to {}-{} failed: {}", heartbeat.sequence(), settings.topic(),
                                    partition, e.toString());
                        }
                    });
        } catch (InterruptException e) {
            // interrupt flag restored by Kafka; the heartbeat is simply lost
        } catch (KafkaException e) {
            log.debug("heartbeat {} to {}-{} not sent: {}", heartbeat.sequence(), settings.topic(), partition,
                    e.toString());
        } catch (IllegalStateException e) {
            if (!closed) {
                throw e;
            }
            // another thread closed the producer meanwhile: a heartbeat after close is simply lost
        }
    }

    /** Leaves the group (at most the close timeout) and closes the clients. Idempotent. */
    void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeClients();
        owned = Set.of();
        log.info("left {} group '{}'", what, settings.groupId());
    }

    /**
     * Drops out the way a crashed process does: the consumer closes without leaving the group, so the group
     * notices only when the session expires. For tests that measure take-over after a crash.
     */
    void abandon() {
        if (closed) {
            return;
        }
        closed = true;
        owned = Set.of();
        if (consumer != null) {
            consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
                    .withTimeout(Duration.ZERO));
        }
        if (producer != null) {
            producer.close(Duration.ZERO);
        }
    }

    private void closeClients() {
        if (consumer != null) {
            try {
                consumer.close(CloseOptions.timeout(settings.closeTimeout()));
            } catch (RuntimeException e) {
                log.warn("closing the {} group consumer failed", what, e);
            }
        }
        if (producer != null) {
            try {
                producer.close(settings.closeTimeout());
            } catch (RuntimeException e) {
                log.warn("closing the heartbeat producer failed", e);
            }
        }
    }

    /** Turns Kafka's rebalance callbacks into changes of the owned partitions, passed on to the listener. */
    private final class RebalanceListener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            try {
                gain(assigned);
            } finally {
                if (confirming) { // called after every completed rebalance, even with nothing new
                    confirming = false;
                    Set<Integer> still = owned;
                    deliver(() -> listener.confirmed(still));
                }
            }
        }

        private void gain(Collection<TopicPartition> assigned) {
            Set<Integer> gained = new TreeSet<>();
            List<TopicPartition> seek = new ArrayList<>();
            for (TopicPartition tp : assigned) {
                if (tp.partition() >= partitions) {
                    if (exactPartitionCount) {
                        log.warn("{} topic '{}' has a partition {} beyond its {} shard(s) (were partitions added?);"
                                + " it is ignored", what, settings.topic(), tp.partition(), partitions);
                    }
                } else if (!owned.contains(tp.partition())) {
                    gained.add(tp.partition());
                    seek.add(tp);
                }
            }
            if (gained.isEmpty()) {
                return;
            }
            consumer.seekToEnd(seek);
            Set<Integer> now = new TreeSet<>(owned);
            now.addAll(gained);
            owned = Set.copyOf(now);
            log.info("assigned partition(s) {} of {} topic '{}' (group '{}'); owning {}", gained, what,
                    settings.topic(), settings.groupId(), now);
            deliver(() -> listener.assigned(Set.copyOf(gained)));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            Set<Integer> gone = drop(revoked);
            if (!gone.isEmpty()) {
                log.info("partition(s) {} of {} topic '{}' (group '{}') revoked", gone, what, settings.topic(),
                        settings.groupId());
                deliver(() -> listener.revoked(gone));
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            Set<Integer> gone = drop(lost);
            if (!gone.isEmpty()) {
                log.warn("partition(s) {} of {} topic '{}' (group '{}') lost", gone, what, settings.topic(),
                        settings.groupId());
                deliver(() -> listener.lost(gone));
            }
        }

        private Set<Integer> drop(Collection<TopicPartition> partitionsGone) {
            Set<Integer> gone = new TreeSet<>();
            for (TopicPartition tp : partitionsGone) {
                if (owned.contains(tp.partition())) {
                    gone.add(tp.partition());
                }
            }
            if (!gone.isEmpty()) {
                Set<Integer> now = new TreeSet<>(owned);
                now.removeAll(gone);
                owned = Set.copyOf(now);
            }
            return Set.copyOf(gone);
        }

        private void deliver(Runnable event) {
            if (!inPoll) {
                return; // while closing: the dispatcher has stopped publishing already
            }
            try {
                event.run();
            } catch (RuntimeException e) {
                callbackFailure = e;
                throw e;
            }
        }
    }
}
