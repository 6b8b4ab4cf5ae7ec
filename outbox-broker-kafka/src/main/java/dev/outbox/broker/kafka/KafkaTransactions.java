package dev.outbox.broker.kafka;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionAbortedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * The transactional sending of a {@link KafkaMessageBroker} built with a transactional id: records queue here, and
 * one thread ({@code outbox-kafka-txn-<id>}) takes everything queued, sends it in one Kafka transaction and commits
 * it; a record's stage completes only once its transaction committed. Records that arrive while a transaction
 * commits wait for the next one, so a busy outbox commits large transactions back to back and an idle one commits
 * each record on its own (group commit: no timer, no extra wait).
 *
 * <h2>Fencing</h2>
 * The producer is created, and {@code initTransactions()} called, lazily: on the first transaction, and again on the
 * first transaction after a fence. {@code initTransactions()} bumps the transactional id's epoch, so that the
 * producer of the previous holder (a deposed leader, paused or cut off) is fenced: its later sends and commits fail
 * with {@link ProducerFencedException} (or {@link InvalidProducerEpochException}), and its open transaction is
 * aborted. A transaction refused so fails every record in it with {@link DeliveryException#fenced}: the dispatcher
 * then lets them leave flight without a verdict and stands down. The fenced producer is closed; its successor is
 * created only by a later send, which the dispatcher makes only once its election says again that it leads; records
 * taken before the dispatcher heard of the fence are refused for {@link #FENCE_QUARANTINE} after it, so that none of
 * them reaches a new producer.
 *
 * <h2>Failures</h2>
 * A transaction fails as a whole. Where some records failed on their own (too large, unknown topic, ...) they fail
 * as the non-transactional broker would fail them, and the others, innocent, are queued again at the head, in their
 * order, for the next transaction (nothing of an aborted transaction is visible to a {@code read_committed}
 * consumer). Otherwise every record fails with the transaction's error (classified as the non-transactional
 * broker's: a timeout or a lost coordinator is an outage). A transaction whose outcome is unknown (a commit that
 * timed out) closes the producer: the next one's {@code initTransactions()} completes or aborts it on the cluster
 * before anything else is sent, so a record failed here can never appear after records sent later.
 *
 * <p>Thread-safe: {@link #send} from any thread; completions run on the transaction thread.
 */
final class KafkaTransactions {
    private static final Logger log = LoggerFactory.getLogger(KafkaTransactions.class);
    /**
     * After a fence, how long every record is refused as fenced too, without a producer: records the dispatcher took
     * before it heard of the fence (queued here, or being sent by its mark thread) must never reach a new producer,
     * whose {@code initTransactions()} would fence the successor and publish them; by then the dispatcher has stood
     * down and reads afresh.
     */
    static final Duration FENCE_QUARANTINE = Duration.ofSeconds(1);

    /** Fails a record on its own error, as the non-transactional broker would (topic checks, classification). */
    interface RecordFailure {
        void fail(OutboxRecord record, CompletableFuture<Void> done, Throwable error, long startedNanos);
    }

    /** A queued record, its stage and, once sent, its own error. */
    private static final class Entry {
        final OutboxRecord record;
        final CompletableFuture<Void> done;
        final long startedNanos;
        volatile Throwable error;
        /** When {@link #error} was set, in the order of the transaction's callbacks (see {@link #owners}). */
        volatile long errorOrder;

        Entry(OutboxRecord record, CompletableFuture<Void> done, long startedNanos) {
            this.record = record;
            this.done = done;
            this.startedNanos = startedNanos;
        }
    }

    private final String transactionalId;
    private final Map<String, Object> producerConfig;
    private final Function<OutboxRecord, ProducerRecord<String, byte[]>> toProducerRecord;
    private final RecordFailure recordFailure;
    private final Set<CompletableFuture<Void>> pending;
    /** Exactly-once publishing's progress topic, or null without it. */
    private final KafkaProgress progress;
    /** With {@link #progress}: what this producer published and the store may still hold. */
    private final PublishedRecords published = new PublishedRecords();
    private final AtomicLong skippedRecords = new AtomicLong();
    private final AtomicLong fencedRecords = new AtomicLong();
    private final AtomicLong transactions = new AtomicLong();
    /** Orders the send callbacks that report an error, across transactions. */
    private final AtomicLong errorOrder = new AtomicLong();
    /** Until when (System.nanoTime) records are refused as fenced; written and read by the transaction thread. */
    private long quarantineUntil;
    private boolean quarantined;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    // --- guarded by lock
    private final ArrayDeque<Entry> queue = new ArrayDeque<>();
    private boolean closing;
    private Thread thread;
    // ---
    /** The current producer, or null: created by the transaction thread, closed by it or by {@link #close}. */
    private volatile Producer<String, byte[]> producer;

    KafkaTransactions(String transactionalId, Map<String, Object> producerConfig,
                      Function<OutboxRecord, ProducerRecord<String, byte[]>> toProducerRecord,
                      RecordFailure recordFailure, Set<CompletableFuture<Void>> pending, KafkaProgress progress) {
        this.progress = progress;
        this.transactionalId = transactionalId;
        this.producerConfig = producerConfig;
        this.toProducerRecord = toProducerRecord;
        this.recordFailure = recordFailure;
        this.pending = pending;
    }

    /** Records refused because this sender was fenced, since the start. */
    long fencedRecords() {
        return fencedRecords.get();
    }

    /** Records acknowledged without a send because an earlier producer of the id had published them, since the start. */
    long skippedRecords() {
        return skippedRecords.get();
    }

    /** The store deleted these acknowledged rows: they leave the progress records. */
    void purged(Collection<Long> ids) {
        published.purged(ids);
    }

    /** Transactions committed, since the start. */
    long committedTransactions() {
        return transactions.get();
    }

    /** Queues {@code record} for the next transaction; {@code done} is already in {@link #pending}. */
    void send(OutboxRecord record, CompletableFuture<Void> done) {
        Entry e = new Entry(record, done, System.nanoTime());
        lock.lock();
        try {
            if (closing) {
                complete(e, DeliveryException.outage("Kafka broker is closed; record " + record.id() + " not sent",
                        null));
                return;
            }
            queue.addLast(e);
            if (thread == null) {
                thread = new Thread(this::run, "outbox-kafka-txn-" + transactionalId);
                thread.setDaemon(true);
                thread.start();
            }
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        List<Entry> batch = new ArrayList<>();
        while (true) {
            lock.lock();
            try {
                while (queue.isEmpty() && !closing) {
                    work.awaitUninterruptibly();
                }
                if (queue.isEmpty()) {
                    return; // closing, and nothing left
                }
                batch.addAll(queue);
                queue.clear();
            } finally {
                lock.unlock();
            }
            try {
                transaction(batch);
            } catch (RuntimeException e) { // a bug: fail what is left rather than leave it pending forever
                log.error("Kafka transaction of {} record(s) failed unexpectedly", batch.size(), e);
                discardProducer();
                for (Entry x : batch) {
                    complete(x, DeliveryException.outage("Kafka transaction failed: " + describe(e), e));
                }
            }
            batch.clear();
        }
    }

    /** Sends {@code batch} in one transaction and completes each record (or queues innocents again). */
    private void transaction(List<Entry> batch) {
        if (quarantined && System.nanoTime() - quarantineUntil < 0) {
            fence(batch, null);
            return;
        }
        quarantined = false;
        Producer<String, byte[]> p;
        try {
            p = producer();
        } catch (KafkaException e) {
            discardProducer();
            if (isFence(e)) {
                fence(batch, e);
                return;
            }
            log.warn("initialising Kafka transactions for '{}' failed: {}", transactionalId, describe(e));
            for (Entry x : batch) {
                complete(x, DeliveryException.outage("Kafka transactions for '" + transactionalId
                        + "' could not be initialised; record " + x.record.id() + " not sent: " + describe(e), e));
            }
            return;
        }
        if (progress != null) {
            batch = published.skipPublished(batch, x -> x.record, x -> {
                skippedRecords.incrementAndGet();
                x.done.complete(null);
                pending.remove(x.done);
            });
            if (batch.isEmpty()) {
                return;
            }
        }
        KafkaException failure = null;
        KafkaException[] progressFailure = new KafkaException[1];
        try {
            p.beginTransaction();
            for (Entry x : batch) {
                x.error = null;
                try {
                    p.send(toProducerRecord.apply(x.record), (metadata, error) -> {
                        if (error != null) {
                            x.errorOrder = errorOrder.incrementAndGet();
                            x.error = error;
                        }
                    });
                } catch (RuntimeException e) {
                    x.errorOrder = errorOrder.incrementAndGet();
                    x.error = e;
                }
            }
            if (progress != null) {
                p.send(progress.record(transactionalId, published.withBatch(batch, x -> x.record)), (m, error) -> {
                    if (error != null) {
                        progressFailure[0] = new KafkaException("the progress record was not written", error);
                    }
                });
            }
            p.commitTransaction();
            if (progressFailure[0] != null) {
                throw progressFailure[0];
            }
        } catch (KafkaException e) {
            failure = e;
        } catch (IllegalStateException e) { // the producer was closed under us (close ran out of time)
            failure = new KafkaException(e);
        }
        if (failure == null && batch.stream().noneMatch(x -> x.error != null)) {
            transactions.incrementAndGet();
            if (progress != null) {
                published.committed(batch, x -> x.record);
            }
            for (Entry x : batch) {
                x.done.complete(null);
                pending.remove(x.done); // after completing: flush must never miss a record in between
            }
            return;
        }
        failed(p, batch, failure);
    }

    private void failed(Producer<String, byte[]> p, List<Entry> batch, KafkaException failure) {
        boolean fenced = failure != null && isFence(failure);
        for (Entry x : batch) {
            fenced |= x.error != null && isFence(x.error);
        }
        if (fenced) {
            discardProducer();
            fence(batch, failure != null ? failure : firstError(batch));
            return;
        }
        boolean unknownOutcome = failure != null && unwrap(failure) instanceof TimeoutException;
        if (unknownOutcome || !abort(p)) {
            // Committed or not, the cluster decides: the next producer's initTransactions settles it first.
            discardProducer();
        }
        Set<Entry> own = owners(batch);
        boolean someOwn = !own.isEmpty();
        List<Entry> again = new ArrayList<>();
        for (Entry x : batch) {
            if (own.contains(x)) {
                recordFailure.fail(x.record, x.done, x.error, x.startedNanos);
            } else if (someOwn && !unknownOutcome) {
                again.add(x); // innocent: aborted with a record that failed on its own
            } else {
                Throwable cause = x.error != null && !(x.error instanceof TransactionAbortedException)
                        && x.error.getClass() != KafkaException.class ? x.error : unwrap(failure);
                DeliveryException d = KafkaErrors.classify(x.record, cause);
                complete(x, d.isPermanent() ? DeliveryException.outage(d.getMessage(), cause) : d);
            }
        }
        if (!again.isEmpty()) {
            lock.lock();
            try {
                for (int i = again.size() - 1; i >= 0; i--) {
                    queue.addFirst(again.get(i));
                }
            } finally {
                lock.unlock();
            }
            log.debug("{} record(s) of an aborted Kafka transaction queued again", again.size());
        }
    }

    /**
     * The records that failed on their own. One error can reach several records: a record that fails in its send
     * (too large, say) puts the producer's transaction in an abortable state, and the producer then fails the records
     * of the transaction it had not sent yet with that same error. Only the first record to get it (in the order of
     * the callbacks: the failing send's comes at once, the others' later) is its owner; the others are innocent.
     */
    private static Set<Entry> owners(List<Entry> batch) {
        Map<Throwable, Entry> first = new IdentityHashMap<>();
        for (Entry x : batch) {
            Throwable e = x.error;
            if (ownError(e)) {
                first.merge(e, x, (a, b) -> a.errorOrder <= b.errorOrder ? a : b);
            }
        }
        Set<Entry> own = Collections.newSetFromMap(new IdentityHashMap<>());
        own.addAll(first.values());
        return own;
    }

    private static Throwable firstError(List<Entry> batch) {
        return batch.stream().map(x -> x.error).filter(e -> e != null).findFirst().orElse(null);
    }

    private void fence(List<Entry> batch, Throwable cause) {
        long n = fencedRecords.addAndGet(batch.size());
        if (cause == null) {
            log.info("{} record(s) refused: the producer of transactional id '{}' was fenced moments ago ({} so far)",
                    batch.size(), transactionalId, n);
            for (Entry x : batch) {
                complete(x, DeliveryException.fenced("record " + x.record.id() + " refused: the producer of"
                        + " transactional id '" + transactionalId + "' was fenced by a newer one moments ago (this"
                        + " instance was deposed)", null));
            }
            return;
        }
        quarantined = true;
        quarantineUntil = System.nanoTime() + FENCE_QUARANTINE.toNanos();
        log.warn("Kafka fenced this producer (transactional id '{}'): another producer took the id since; {} record(s)"
                + " refused ({} so far)", transactionalId, batch.size(), n);
        for (Entry x : batch) {
            complete(x, DeliveryException.fenced("Kafka refused record " + x.record.id() + ": the producer of"
                    + " transactional id '" + transactionalId + "' was fenced by a newer one (this instance was"
                    + " deposed): " + describe(cause), cause));
        }
    }

    private boolean abort(Producer<String, byte[]> p) {
        try {
            p.abortTransaction();
            return true;
        } catch (RuntimeException e) {
            log.debug("aborting the Kafka transaction failed; the producer is replaced", e);
            return false;
        }
    }

    /** The error is the record's own (it would fail again in any transaction), not the transaction's. */
    private static boolean ownError(Throwable error) {
        return error != null && (KafkaErrors.suspectsMissingTopic(error)
                || KafkaErrors.isPermanent(error));
    }

    static boolean isFence(Throwable error) {
        for (Throwable c = error; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    private Producer<String, byte[]> producer() {
        Producer<String, byte[]> p = producer;
        if (p != null) {
            return p;
        }
        long started = System.nanoTime();
        p = new KafkaProducer<>(producerConfig, new StringSerializer(), new ByteArraySerializer());
        producer = p;
        p.initTransactions(); // fences the previous holder of the transactional id
        if (progress != null) { // only now: a transaction of the previous producer may have committed until here
            published.recovered(progress.read(transactionalId));
        }
        log.info("Kafka transactions initialised for transactional id '{}' in {} ms: earlier producers of the id are"
                + " fenced", transactionalId, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        return p;
    }

    private void discardProducer() {
        Producer<String, byte[]> p = producer;
        producer = null;
        if (p != null) {
            try {
                p.close(Duration.ZERO);
            } catch (RuntimeException e) {
                log.debug("closing a Kafka producer failed", e);
            }
        }
    }

    private void complete(Entry x, DeliveryException error) {
        x.done.completeExceptionally(error);
        pending.remove(x.done);
    }

    /**
     * Stops taking records, lets the transaction thread commit what is queued for at most {@code timeout}, then
     * closes the producer (an open transaction is aborted by the cluster) and fails what is left.
     *
     * @return the records failed
     */
    int close(Duration timeout) {
        Thread t;
        lock.lock();
        try {
            closing = true;
            t = thread;
            work.signalAll();
        } finally {
            lock.unlock();
        }
        if (t != null) {
            try {
                t.join(Math.max(1, timeout.toMillis()));
                if (t.isAlive()) {
                    discardProducer(); // a commit under way fails at once
                    t.join(5_000);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        List<Entry> left;
        lock.lock();
        try {
            left = new ArrayList<>(queue);
            queue.clear();
        } finally {
            lock.unlock();
        }
        for (Entry x : left) {
            complete(x, DeliveryException.retriable("Kafka broker closed before the record was sent", null));
        }
        discardProducer();
        return left.size();
    }

    private static Throwable unwrap(Throwable t) {
        Throwable c = t;
        while (c != null && c.getClass() == KafkaException.class && c.getCause() != null) {
            c = c.getCause();
        }
        return c;
    }

    private static String describe(Throwable t) {
        return t == null ? "unknown" : t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": "
                + t.getMessage());
    }
}
