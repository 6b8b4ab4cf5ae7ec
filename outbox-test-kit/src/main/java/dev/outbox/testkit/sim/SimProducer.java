package dev.outbox.testkit.sim;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.PurgeListener;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One dispatcher's sender in the simulation's {@link SimTransactionalBroker}, modelled on {@code KafkaTransactions}
 * with a progress topic: the engine's sends queue here, and the environment's steps take what is queued into one
 * transaction (creating the producer first if there is none: {@code initTransactions()} fences the earlier ones,
 * then the last progress entry is read and the records it lists are acknowledged without a send), request its
 * commit with the progress entry ({@link SimProgress}) and, in the coordinator, complete it. A fenced producer is
 * discarded, and every record is refused as fenced for a second after ({@code FENCE_QUARANTINE}); a commit in doubt
 * (its answer lost, or timed out) discards the producer too, so that the next one's fence settles it first. The
 * engine's purge reports ({@link PurgeListener}) take rows off the progress. Only the simulation's workers call it,
 * one at a time; not thread-safe.
 */
final class SimProducer implements MessageBroker, PurgeListener {
    /** As {@code KafkaTransactions.FENCE_QUARANTINE}. */
    static final long QUARANTINE = Duration.ofSeconds(1).toNanos();

    /** A record the engine sent, its stage and its deadline. */
    record Sent(OutboxRecord record, CompletableFuture<Void> future, long due) {
    }

    private final SimTransactionalBroker broker;
    final String name;
    final List<Sent> queue = new ArrayList<>();
    /** The transaction the producer waits on, or null. */
    SimTransactionalBroker.Txn current;
    /** The producer's epoch, if it has one ({@link #initialised}). */
    int epoch;
    private boolean initialised;
    private long quarantineUntil;
    private boolean closed;
    private final SimProgress memory = new SimProgress();

    SimProducer(SimTransactionalBroker broker, String name) {
        this.broker = broker;
        this.name = name;
    }

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        broker.hooks.sending().accept(name, record);
        if (record.topic().equals(Simulation.POISON_TOPIC)) {
            event("broker: rejects #" + record.id() + " for good (poison)");
            return CompletableFuture.failedFuture(DeliveryException.permanent("poison", null));
        }
        if (closed) {
            return CompletableFuture.failedFuture(DeliveryException.retriable("producer closed", null));
        }
        Sent s = new Sent(record, new CompletableFuture<>(), broker.sched.now() + broker.deliveryTimeout);
        queue.add(s);
        broker.sched.yieldPoint();
        return s.future();
    }

    // ---- the environment's steps

    /** The transaction thread takes what is queued: one transaction, after the producer's creation if needed. */
    void begin() {
        List<Sent> batch = new ArrayList<>(queue);
        queue.clear();
        if (broker.sched.now() < quarantineUntil) {
            fail(batch, DeliveryException.fenced("record refused: " + name + " was fenced moments ago", null));
            return;
        }
        if (initialised && epoch < broker.epoch()) {
            event(name + ": its producer is fenced (epoch " + epoch + " < " + broker.epoch() + ")");
            fenced();
            fail(batch, DeliveryException.fenced(name + "'s producer was fenced", null));
            return;
        }
        if (!initialised) {
            Set<Long> listed;
            if (broker.bugs.contains(ProgressBug.PROGRESS_READ_BEFORE_FENCE)) {
                listed = broker.readProgress();
                event(name + ": reads the progress " + listed + " (planted: before the fence)");
                broker.fence(this);
            } else {
                broker.fence(this);
                listed = broker.readProgress();
                event(name + ": reads the progress " + listed);
            }
            memory.recovered(listed);
            initialised = true;
        }
        batch = memory.skipPublished(batch, s -> {
            event(name + ": acknowledges #" + s.record().id() + " without sending it (listed as published)");
            s.future().complete(null);
        });
        if (batch.isEmpty()) {
            return;
        }
        current = broker.begin(this, batch);
        event(name + ": sends " + current.ids() + " in a transaction");
    }

    /** The producer requests its transaction's commit, with its progress entry; {@code abort}: a send failed. */
    void requestCommit(boolean abort) {
        SimTransactionalBroker.Txn t = current;
        Set<Long> entry = memory.withBatch(t.records);
        if (broker.bugs.contains(ProgressBug.PROGRESS_OUTSIDE_TRANSACTION)) {
            broker.writeProgressNow(entry);
            event(name + ": writes the progress " + entry + " (planted: outside the transaction, visible now)");
        } else {
            t.progress = entry;
        }
        if (abort) {
            event(name + ": requests the commit of " + t.ids() + ", but a send in it failed");
            broker.abort(t, "aborts", DeliveryException.retriable("the transaction aborted", null));
            return;
        }
        t.committing = true;
        event(name + ": requests the commit of " + t.ids() + (t.progress == null ? "" : " with progress "
                + t.progress));
    }

    /** The coordinator completed {@code t}'s commit. */
    void committed(SimTransactionalBroker.Txn t) {
        if (t.orphaned) {
            return;
        }
        if (current == t) {
            current = null;
        }
        memory.committed(t.records);
        for (Sent s : t.records) {
            s.future().complete(null);
        }
    }

    /** The coordinator aborted {@code t}. */
    void aborted(SimTransactionalBroker.Txn t, DeliveryException why) {
        if (t.orphaned) {
            return;
        }
        if (current == t) {
            current = null;
        }
        if (why.isFenced()) {
            fenced();
        }
        fail(t.records, why);
    }

    /**
     * The producer gives up waiting on {@code t}, whose outcome is unknown: the next producer's fence settles it. Its
     * records fail as an outage: a commit whose answer does not come fails in {@code KafkaTransactions} with Kafka's
     * {@code TimeoutException} (a {@code RetriableException}), which {@code KafkaErrors} classifies so ({@link
     * #timedOut}).
     */
    void inDoubt(SimTransactionalBroker.Txn t, String why) {
        t.orphaned = true;
        if (current == t) {
            current = null;
        }
        initialised = false;
        fail(t.records, timedOut(why + ": the outcome is unknown"));
    }

    /**
     * The failure of a record that timed out, as {@code outbox-broker-kafka} reports it: Kafka fails a record not
     * acknowledged within {@code delivery.timeout.ms}, and a commit not answered within {@code max.block.ms}, with
     * its {@code TimeoutException}, which {@code KafkaErrors.classify} makes an outage (never counted towards a
     * record's attempts, never parked). (The coordinator's own {@code transaction.timeout.ms}, 60 s by default and
     * far above the delivery timeout, would fence the producer instead: not counted either.) A counted failure here
     * let three timeouts in a row park a record (G1) where the real broker never would (seed 172 of
     * {@code SimulationExactlyOnceTest}'s mark harvest).
     */
    static DeliveryException timedOut(String what) {
        return DeliveryException.outage("simulated timeout: " + what, null);
    }

    /** Times out what is due; whether anything was. */
    boolean expire(long now) {
        boolean any = false;
        for (Sent s : new ArrayList<>(queue)) {
            if (s.due() <= now) {
                queue.remove(s);
                event("broker: #" + s.record().id() + " sent by " + name + " times out in its queue");
                s.future().completeExceptionally(timedOut("delivery timeout in the queue"));
                any = true;
            }
        }
        SimTransactionalBroker.Txn t = current;
        if (t != null && t.records.stream().anyMatch(s -> s.due() <= now)) {
            any = true;
            if (t.committing) {
                event("broker: " + name + "'s commit of " + t.ids() + " times out: its outcome is in doubt");
                inDoubt(t, "commit timed out");
            } else {
                broker.abort(t, "times out and aborts", timedOut("delivery timeout"));
            }
        }
        return any;
    }

    long nextDue() {
        long due = Long.MAX_VALUE;
        for (Sent s : queue) {
            due = Math.min(due, s.due());
        }
        if (current != null) {
            for (Sent s : current.records) {
                due = Math.min(due, s.due());
            }
        }
        return due;
    }

    boolean idle() {
        return queue.isEmpty() && current == null;
    }

    private void fenced() {
        initialised = false;
        quarantineUntil = broker.sched.now() + QUARANTINE;
    }

    private void fail(List<Sent> sent, DeliveryException why) {
        for (Sent s : sent) {
            s.future().completeExceptionally(why);
        }
    }

    private void event(String what) {
        broker.hooks.event().accept(what);
    }

    // ---- MessageBroker, PurgeListener

    @Override
    public void purged(Collection<Long> ids) {
        broker.sched.yieldPoint(); // a crash or a hand-over may fall between the purge and its report
        memory.purged(ids);
        event(name + ": hears of the purge of " + ids);
    }

    @Override
    public boolean flush(Duration timeout) {
        long left = timeout.toNanos();
        broker.lock.lock();
        try {
            while (!idle() && left > 0) {
                left = broker.changed.awaitNanos(left);
            }
            return idle();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            broker.lock.unlock();
        }
    }

    @Override
    public void close(Duration timeout) {
        flush(timeout);
        closed = true;
        List<Sent> left = new ArrayList<>(queue);
        queue.clear();
        if (current != null) {
            current.orphaned = true; // the coordinator aborts it when it times out, or at the next fence
            left.addAll(current.records);
            current = null;
        }
        initialised = false;
        if (!left.isEmpty()) {
            event("broker: " + name + "'s producer closes; its records in flight fail");
        }
        fail(left, DeliveryException.retriable("producer closed", null));
        broker.signal();
    }

    @Override
    public String toString() {
        return name + (initialised ? "e" + epoch : "-") + (closed ? "X" : "") + queue.stream()
                .map(s -> s.record().id()).toList() + (current == null ? "" : current.ids())
                + (broker.sched.now() < quarantineUntil ? "Q" + (quarantineUntil - broker.sched.now()) : "")
                + memory;
    }
}
