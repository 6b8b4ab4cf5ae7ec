package dev.outbox.broker.kafka;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * What a {@link KafkaMessageBroker} knows about its records' topics, so that one topic's trouble never holds up
 * another topic's records.
 *
 * <p>{@code KafkaProducer.send} blocks its caller, for up to {@code max.block.ms}, while it fetches the metadata of
 * a topic it does not know; for a topic that does not exist (on a cluster that does not create topics) it blocks
 * for all of it. The dispatcher calls {@link dev.outbox.spi.MessageBroker#send} from the one thread that sends
 * every key's records, so such a wait would hold up every key. Here a record reaches the producer on the caller's
 * thread only when its topic is <em>ready</em>: the producer has its metadata and used it lately (within half of
 * {@code metadata.max.idle.ms}, after which the producer forgets an unused topic). A record of any other topic waits
 * in its topic's lane while a warm-up thread ({@code outbox-kafka-topic-warmup}) asks the producer for the topic's
 * partitions — which also lets a cluster that creates topics on demand create it; the lane's records are then
 * produced from that thread and the topic is ready. If that wait runs out, the admin client confirms whether the
 * topic exists: if it does not, the lane's records fail permanently and, for {@link #MISSING_MEMORY}, new records of
 * the topic fail after a quick admin check instead of a metadata wait. Only the records of that topic wait, on a
 * thread of their own; at most {@link #WARMUP_THREADS} topics are warmed up at once.
 *
 * <p>Thread-safe.
 */
final class KafkaTopics {
    private static final Logger log = LoggerFactory.getLogger(KafkaTopics.class);

    /** How long a topic confirmed missing fails new records after a quick check, without a metadata wait. */
    static final Duration MISSING_MEMORY = Duration.ofSeconds(5);
    /** How many topics are warmed up at once. */
    static final int WARMUP_THREADS = 4;
    /** Kafka's default {@code metadata.max.idle.ms}. */
    static final long DEFAULT_METADATA_IDLE_MS = 300_000;
    /** A ready topic's last use is written at most this often, so that sends do not all write one field. */
    private static final long TOUCH_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** Where a record goes once its topic is ready. */
    interface Producing {
        /** Hands {@code record} to the producer; must not wait on metadata (the topic is ready). */
        void produce(OutboxRecord record, CompletableFuture<Void> done, long startedNanos);
    }

    private final Supplier<Producer<?, ?>> metadata;
    private final Supplier<Admin> admin;
    private final Duration deliveryTimeout;
    private final long freshNanos;
    private final Producing producing;
    private final Runnable sendPending;
    private final Set<CompletableFuture<Void>> pending;
    private final Map<String, Lane> lanes = new ConcurrentHashMap<>();
    private final Map<String, Long> missing = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor warmups;
    /** The lane of the last record sent at once: a drain's next record usually has the same topic. */
    private volatile Lane last;
    private volatile boolean closed;
    /** Set by {@link #sendPendingRequested}, taken by a warm-up once it has produced its records. */
    private volatile boolean sendPendingRequested;

    /**
     * @param metadata     the producer whose metadata {@code producing} relies on (called on a warm-up thread)
     * @param admin        the admin client that confirms a missing topic
     * @param metadataIdle the producer's {@code metadata.max.idle.ms}
     * @param sendPending  asks the producer to send what it holds back: called after the records that waited for a
     *                     warm-up were produced, if {@link #sendPendingRequested} was called meanwhile (the request
     *                     came while they waited here, so the producer's flush could not include them)
     * @param pending      the broker's records not yet completed: a record waiting here is one of them
     */
    KafkaTopics(Supplier<Producer<?, ?>> metadata, Supplier<Admin> admin, Duration deliveryTimeout,
                Duration metadataIdle, Producing producing, Runnable sendPending,
                Set<CompletableFuture<Void>> pending) {
        this.metadata = metadata;
        this.admin = admin;
        this.deliveryTimeout = deliveryTimeout;
        this.freshNanos = Math.max(1, metadataIdle.toNanos() / 2);
        this.producing = producing;
        this.sendPending = sendPending;
        this.pending = pending;
        AtomicInteger threads = new AtomicInteger();
        this.warmups = new ThreadPoolExecutor(WARMUP_THREADS, WARMUP_THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "outbox-kafka-topic-warmup-" + threads.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        this.warmups.allowCoreThreadTimeOut(true);
    }

    /** A topic's state: ready, or warming up with the records that wait for it. */
    private static final class Lane {
        final String topic;
        volatile boolean ready;
        /** When a record of this topic last went to the producer (System.nanoTime). */
        volatile long usedNanos;
        // --- guarded by this
        final ArrayDeque<Waiting> waiting = new ArrayDeque<>();
        boolean warming;

        Lane(String topic) {
            this.topic = topic;
        }

        boolean fresh(long now, long freshNanos) {
            return ready && now - usedNanos < freshNanos;
        }
    }

    private record Waiting(OutboxRecord record, CompletableFuture<Void> done, long startedNanos) {
    }

    /**
     * Sends {@code record} now if its topic is ready, else lets it wait for its topic without blocking the caller.
     * An illegal topic name fails it at once.
     */
    void send(OutboxRecord record, CompletableFuture<Void> done) {
        long now = System.nanoTime();
        String topic = record.topic();
        Lane lane = last;
        if (lane == null || !lane.topic.equals(topic)) {
            lane = topic == null ? null : lanes.get(topic);
        }
        if (lane != null && lane.fresh(now, freshNanos)) {
            if (now - lane.usedNanos > TOUCH_NANOS) {
                lane.usedNanos = now;
            }
            last = lane;
            producing.produce(record, done, now);
            return;
        }
        sendSlowly(record, done, now);
    }

    private void sendSlowly(OutboxRecord record, CompletableFuture<Void> done, long now) {
        String topic = record.topic();
        String problem = KafkaSettings.topicProblem(topic);
        if (problem != null) {
            done.completeExceptionally(DeliveryException.permanent("record " + record.id() + " not sent: "
                    + problem, new InvalidTopicException(problem)));
            return;
        }
        Long missingUntil = missing.get(topic);
        if (missingUntil != null) {
            if (now - missingUntil < 0) {
                // Confirmed missing moments ago: ask the cluster again (milliseconds) rather than wait for the
                // producer's metadata — the topic may have been created since, e.g. by an operator before replaying
                // the records parked for it.
                recheck(record, done, now);
                return;
            }
            missing.remove(topic, missingUntil);
        }
        Lane lane = lanes.computeIfAbsent(topic, Lane::new);
        boolean sendNow = false;
        boolean startWarmUp = false;
        synchronized (lane) {
            if (lane.fresh(now, freshNanos)) {
                sendNow = true;
            } else {
                lane.ready = false;
                pending.add(done);
                lane.waiting.addLast(new Waiting(record, done, now));
                startWarmUp = !lane.warming;
                lane.warming = true;
            }
        }
        if (sendNow) {
            last = lane;
            producing.produce(record, done, now);
        } else if (startWarmUp) {
            try {
                warmups.execute(() -> warmUp(lane));
            } catch (RejectedExecutionException e) { // closed under us
                warmUp(lane, new IllegalStateException("Kafka broker is closed"));
            }
        }
    }

    private void warmUp(Lane lane) {
        Throwable error = null;
        try {
            metadata.get().partitionsFor(lane.topic);
        } catch (RuntimeException e) {
            error = closed ? new IllegalStateException("Kafka broker is closed", e) : e;
        }
        warmUp(lane, error);
    }

    /** Sends (or, after {@code error}, fails) what waits in {@code lane}, until nothing does. */
    private void warmUp(Lane lane, Throwable error) {
        if (error == null) {
            log.debug("topic '{}' is ready", lane.topic);
        } else {
            log.debug("topic '{}' is not ready: {}", lane.topic, KafkaErrors.describe(error));
        }
        while (true) {
            List<Waiting> batch;
            synchronized (lane) {
                if (lane.waiting.isEmpty()) {
                    lane.warming = false;
                    if (error == null) {
                        lane.usedNanos = System.nanoTime();
                        lane.ready = true;
                    } else {
                        lanes.remove(lane.topic, lane); // a writer's misspelt topics must not pile up here
                    }
                    return;
                }
                batch = new ArrayList<>(lane.waiting);
                lane.waiting.clear();
            }
            for (Waiting w : batch) {
                if (error == null) {
                    producing.produce(w.record, w.done, w.startedNanos);
                } else {
                    fail(w.record, w.done, error, w.startedNanos);
                }
            }
            if (error == null && sendPendingRequested) {
                sendPendingRequested = false;
                sendPending.run();
            }
        }
    }

    /**
     * Fails {@code record} for {@code error}: after a sign that its topic is missing, once the admin client has said
     * whether it is (and the topic is no longer ready), else at once, as {@link KafkaErrors#classify} says.
     */
    void fail(OutboxRecord record, CompletableFuture<Void> done, Throwable error, long startedNanos) {
        Throwable cause = KafkaErrors.unwrap(error);
        if (KafkaErrors.suspectsMissingTopic(cause) && !closed) {
            Lane lane = lanes.get(record.topic());
            if (lane != null) {
                lane.ready = false; // its next record waits for metadata on a warm-up thread, not on the caller's
            }
            confirmMissing(record, done, cause, startedNanos);
            return;
        }
        done.completeExceptionally(KafkaErrors.classify(record, cause));
        pending.remove(done);
    }

    private void confirmMissing(OutboxRecord record, CompletableFuture<Void> done, Throwable cause,
                                long startedNanos) {
        Admin a;
        try {
            a = admin.get();
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
            done.completeExceptionally(DeliveryException.outage("Kafka did not acknowledge record " + record.id()
                    + " and its topic '" + record.topic() + "' could not be checked: " + KafkaErrors.describe(e),
                    cause));
            pending.remove(done);
            return;
        }
        // The check must not stretch the send beyond its documented bound, delivery.timeout.ms.
        long left = deliveryTimeout.toMillis() - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
        a.describeTopics(List.of(record.topic()), new DescribeTopicsOptions().timeoutMs((int) Math.max(100, left)))
                .allTopicNames()
                .whenComplete((topics, error) -> {
                    Throwable checked = error == null ? null : KafkaErrors.unwrap(error);
                    if (checked instanceof UnknownTopicOrPartitionException) {
                        missing.put(record.topic(), System.nanoTime() + MISSING_MEMORY.toNanos());
                        log.warn("topic '{}' does not exist and the broker did not create it; record {} fails"
                                + " permanently", record.topic(), record.id());
                        done.completeExceptionally(DeliveryException.permanent("Kafka can never accept record "
                                + record.id() + ": topic '" + record.topic() + "' does not exist", checked));
                    } else if (checked instanceof AuthorizationException) {
                        done.completeExceptionally(KafkaErrors.classify(record, checked));
                    } else {
                        if (checked != null) {
                            cause.addSuppressed(checked);
                        }
                        done.completeExceptionally(DeliveryException.outage("Kafka did not acknowledge record "
                                + record.id() + " (topic '" + record.topic() + "' exists or could not be checked): "
                                + KafkaErrors.describe(cause), cause));
                    }
                    pending.remove(done);
                });
    }

    /** The record's topic was confirmed missing moments ago: fails it if the cluster still says so, else sends it. */
    private void recheck(OutboxRecord record, CompletableFuture<Void> done, long startedNanos) {
        Admin a;
        try {
            a = admin.get();
        } catch (RuntimeException e) {
            done.completeExceptionally(DeliveryException.outage("record " + record.id() + " not sent: topic '"
                    + record.topic() + "' was missing moments ago and could not be checked again: "
                    + KafkaErrors.describe(e), e));
            return;
        }
        pending.add(done);
        a.describeTopics(List.of(record.topic()), new DescribeTopicsOptions().timeoutMs(
                        (int) Math.max(100, Math.min(deliveryTimeout.toMillis(), 5_000))))
                .allTopicNames()
                .whenComplete((topics, error) -> {
                    Throwable checked = error == null ? null : KafkaErrors.unwrap(error);
                    if (checked instanceof UnknownTopicOrPartitionException) {
                        done.completeExceptionally(DeliveryException.permanent("record " + record.id()
                                + " not sent: topic '" + record.topic() + "' does not exist", checked));
                        pending.remove(done);
                    } else if (checked != null) {
                        done.completeExceptionally(KafkaErrors.classify(record, checked));
                        pending.remove(done);
                    } else {
                        missing.remove(record.topic());
                        log.info("topic '{}' exists now; sending to it again", record.topic());
                        send(record, done); // through its lane: the producer may not have its metadata yet
                    }
                });
    }

    /**
     * The dispatcher asked the broker to send what it holds back ({@link dev.outbox.spi.MessageBroker#sendPending}):
     * records waiting for a warm-up now are sent without lingering once their topic is ready.
     */
    void sendPendingRequested() {
        sendPendingRequested = true;
    }

    /** Topics whose records wait for a warm-up now (for tests and diagnostics). */
    int warmingTopics() {
        int n = 0;
        for (Lane lane : lanes.values()) {
            synchronized (lane) {
                n += lane.warming ? 1 : 0;
            }
        }
        return n;
    }

    /**
     * Lets the warm-ups under way finish, for at most {@code timeout} (their records are produced, or fail), then
     * stops them: a metadata wait still under way is interrupted, and what waits for it fails as an outage. The
     * broker must refuse new records first. Idempotent.
     */
    void close(Duration timeout) {
        warmups.shutdown();
        try {
            if (warmups.awaitTermination(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closed = true;
        warmups.shutdownNow();
    }
}
