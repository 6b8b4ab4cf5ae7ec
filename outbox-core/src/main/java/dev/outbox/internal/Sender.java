package dev.outbox.internal;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;

/**
 * Hands records to the broker, and stops doing so at once when leadership ends. Sends happen outside the state's lock
 * but under the send lock, which {@link #stopPublishing} and the taking of a database epoch also take: once a stop
 * returns, no send is under way and none starts until leadership is acquired again; and a leader revoked between
 * deciding to take the epoch and taking it cannot take it after its successor did.
 *
 * <p>Thread-safe: the harvest thread sends, the leader thread (and close) stops.
 */
final class Sender {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    private final String name;
    private final EngineRuntime runtime;
    private final MessageBroker broker;
    private final Store store;
    private final EngineState state;
    private final EngineEvents events;
    private final SettleLoop settle;
    private final BooleanSupplier leaseValid;
    private final Lock sendLock;
    /** Incremented by every request to stop publishing, so that a send batch under way stops early. */
    private final AtomicInteger stopRequests = new AtomicInteger();

    /** {@code leaseValid} says whether the leadership lease still holds, on the monotonic clock. */
    Sender(String name, EngineRuntime runtime, MessageBroker broker, Store store, EngineState state,
           EngineEvents events, SettleLoop settle, BooleanSupplier leaseValid) {
        this.name = name;
        this.runtime = runtime;
        this.broker = broker;
        this.store = store;
        this.state = state;
        this.events = events;
        this.settle = settle;
        this.leaseValid = leaseValid;
        this.sendLock = runtime.newLock();
    }

    /**
     * Sends {@code batch} if leadership is still in {@code markEpoch}, stopping early when it ends or the lease
     * lapses; what was not sent leaves flight (its rows are read again later). Each broker answer goes to the settle
     * thread.
     */
    void send(List<Flight> batch, long markEpoch) {
        int stops = stopRequests.get();
        sendLock.lock();
        try {
            boolean current;
            state.lock.lock();
            try {
                current = state.leadership.epoch() == markEpoch && state.leadership.leading();
            } finally {
                state.lock.unlock();
            }
            int i = 0;
            for (; current && i < batch.size(); i++) {
                if (stopRequests.get() != stops) {
                    break; // leadership is being given up: send nothing more
                }
                if (!leaseValid.getAsBoolean()) {
                    log.warn("{}: leadership lease lapsed before a send; holding back", name);
                    state.remark(); // the held-back rows stay marked with this id: re-mark them later
                    break;
                }
                Flight f = batch.get(i);
                if (f.superseded()) { // latest only, and a newer record of its topic and key is queued: not sent
                    settle.add(new Completion(f, null, runtime.nanoTime()));
                    continue;
                }
                OutboxRecord record = state.skipped.carry(f.record());
                CompletionStage<Void> stage;
                try {
                    stage = broker.send(record);
                } catch (RuntimeException e) {
                    settle.add(new Completion(f, e, runtime.nanoTime()));
                    continue;
                }
                events.sent.incrementAndGet();
                events.callbacks.sent(record); // hook: send
                runtime.protocolOrder().sent(store, f.record());
                stage.whenComplete((ok, error) -> settle.add(new Completion(f, error, runtime.nanoTime())));
            }
            if (i < batch.size()) {
                // Fenced, refreshed or lease lapsed before these were sent: they never leave.
                state.lock.lock();
                try {
                    for (Flight f : batch.subList(i, batch.size())) {
                        state.schedule.unsent(f);
                    }
                    state.unsent();
                } finally {
                    state.lock.unlock();
                }
            }
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * Stops sending: clears the leader id and every pending record ({@link EngineState#stopped()}). Taking the send
     * lock first means that no send is under way when this returns.
     *
     * @return whether this instance was leading
     */
    boolean stopPublishing() {
        stopRequests.incrementAndGet();
        sendLock.lock();
        try {
            boolean was = state.stopped();
            events.health.notLeading();
            return was;
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * Runs {@code action} under the send lock if this instance still holds {@code leadership} (and {@code more}
     * says go on): a stop that began before waits until it is done, and one that completed first prevents it.
     *
     * @return whether it ran
     */
    boolean whileLeading(long leadership, BooleanSupplier more, Runnable action) {
        sendLock.lock();
        try {
            state.lock.lock();
            try {
                if (!state.leadership.leading() || state.leadership.leaderships() != leadership
                        || !more.getAsBoolean()) {
                    return false;
                }
            } finally {
                state.lock.unlock();
            }
            action.run();
            return true;
        } finally {
            sendLock.unlock();
        }
    }
}
