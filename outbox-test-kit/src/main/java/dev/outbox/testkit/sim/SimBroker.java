package dev.outbox.testkit.sim;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * The simulated broker of a {@link SimRun} (without {@link SimulationBuilder#exactlyOnce()}): each dispatcher's
 * {@link MessageBroker}, whose sends wait in the run's pending list until the environment acknowledges or fails
 * them, or they time out, or the producer closes. Used on the run's threads under the {@link SimScheduler}.
 */
final class SimBroker {
    private final SimRun run;
    private final SimulationConfig config;
    private final SimScheduler sched;
    private final Lock brokerLock;
    private final Condition resolved;

    /** The broker of {@code run}; takes its lock from the run's scheduler. */
    SimBroker(SimRun run) {
        this.run = run;
        this.config = run.config;
        this.sched = run.sched;
        brokerLock = sched.newLock();
        resolved = brokerLock.newCondition();
    }

    /** The broker that dispatcher {@code name} sends through. */
    MessageBroker forDispatcher(String name) {
        return new Broker(name);
    }

    /** How a pending send ends. */
    enum Resolution { ACK, FAIL, APPEND_THEN_FAIL, TIMEOUT, CLOSED }

    /** A send under way: its sender, its record, its future, and when it times out (virtual time). */
    static final class Pending {
        final String sender;
        final OutboxRecord record;
        final CompletableFuture<Void> future = new CompletableFuture<>();
        final long due;

        Pending(String sender, OutboxRecord record, long due) {
            this.sender = sender;
            this.record = record;
            this.due = due;
        }
    }

    /** Ends the pending send {@code p} (unless it ended already) as {@code how} says, and traces it. */
    void resolve(Pending p, Resolution how) {
        brokerLock.lock();
        try {
            if (!run.pending.remove(p)) {
                return;
            }
            resolved.signalAll();
        } finally {
            brokerLock.unlock();
        }
        OutboxRecord r = p.record;
        long id = run.wid(r);
        switch (how) {
            case ACK -> {
                run.checks.append(p.record);
                run.event("broker: acknowledges #" + id + " sent by " + p.sender);
                p.future.complete(null);
            }
            case FAIL -> {
                run.sendFailures--;
                run.faults++;
                run.event("broker: fails #" + id + " sent by " + p.sender);
                p.future.completeExceptionally(DeliveryException.retriable("simulated failure", null));
            }
            case APPEND_THEN_FAIL -> {
                run.duplicates--;
                run.faults++;
                run.checks.append(p.record);
                run.event("broker: appends #" + id + " but its acknowledgement to " + p.sender + " is lost");
                p.future.completeExceptionally(DeliveryException.retriable("simulated lost ack", null));
            }
            case TIMEOUT -> {
                run.event("broker: #" + id + " sent by " + p.sender + " times out");
                // An outage, as both real brokers report a timeout (KafkaErrors: Kafka's TimeoutException; RabbitMQ:
                // an unconfirmed publish): never counted towards a record's attempts, never parked.
                p.future.completeExceptionally(DeliveryException.outage("simulated delivery timeout", null));
            }
            case CLOSED -> {
                run.event("broker: #" + id + " fails, " + p.sender + "'s producer closed");
                p.future.completeExceptionally(DeliveryException.retriable("producer closed", null));
            }
        }
    }

    final class Broker implements MessageBroker {
        final String name;

        Broker(String name) {
            this.name = name;
        }

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            if (config.pauseInsideSend) {
                sched.yieldPoint(); // a pause may fall between the engine's lease check and the send
            }
            if (run.shardGroup != null) {
                run.checks.checkShardLeader(name, record);
            }
            run.checks.sending(name, record);
            if (record.topic().equals(Simulation.POISON_TOPIC)) {
                run.event("broker: rejects #" + run.wid(record) + " for good (poison)");
                return CompletableFuture.failedFuture(DeliveryException.permanent("poison", null));
            }
            Pending p = new Pending(name, record, sched.now() + config.deliveryTimeout.toNanos());
            run.pending.add(p); // at once: the record has left
            sched.yieldPoint();
            return p.future;
        }

        @Override
        public boolean flush(Duration timeout) {
            long left = timeout.toNanos();
            brokerLock.lock();
            try {
                while (mine() && left > 0) {
                    left = resolved.awaitNanos(left);
                }
                return !mine();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            } finally {
                brokerLock.unlock();
            }
        }

        private boolean mine() {
            for (Pending p : run.pending) {
                if (p.sender.equals(name)) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void close(Duration timeout) {
            flush(timeout);
            for (Pending p : new ArrayList<>(run.pending)) {
                if (p.sender.equals(name)) {
                    resolve(p, Resolution.CLOSED);
                }
            }
        }

        @Override
        public String toString() {
            return name;
        }
    }
}
