package dev.outbox.broker.rabbitmq;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Function;

/**
 * The records one confirm-mode channel has in flight, by publish sequence number, and how each ends: an ack
 * completes it (unless the broker returned it first: then it fails permanently), a nack fails it (retriable), a
 * deadline that passes fails it (an outage), and a channel that closes fails everything still in flight at once.
 * Pure bookkeeping: no I/O, no threads, no clock of its own (times are passed in).
 *
 * <p>Thread-safe: records are added under the publisher's lock while acks, nacks and returns arrive on the
 * connection's I/O thread and deadlines are checked on the broker's own; each record is settled exactly once (the
 * one who removes it from the map settles it).
 */
final class Confirms {
    private final ConcurrentSkipListMap<Long, InFlight> inFlight = new ConcurrentSkipListMap<>();
    /** Settles a record: completes its stage ({@code failure} null) or fails it, and forgets it as pending. */
    private final Settler settler;
    private boolean closed;

    /** What happens to a record once its outcome is known. */
    interface Settler {
        /**
         * Called once per record.
         *
         * @param record  the record that left flight
         * @param failure why it failed, or null if it was acknowledged
         */
        void settle(InFlight record, DeliveryException failure);
    }

    /** A record on the wire: what it is, where it went, its stage, its deadline, and whether it was returned. */
    static final class InFlight {
        private final OutboxRecord record;
        private final String exchange;
        private final String routingKey;
        private final CompletableFuture<Void> done;
        private final long deadline;
        private DeliveryException returned;

        /**
         * @param deadline {@link System#nanoTime()} by which it must be confirmed
         */
        InFlight(OutboxRecord record, String exchange, String routingKey, CompletableFuture<Void> done,
                 long deadline) {
            this.record = record;
            this.exchange = exchange;
            this.routingKey = routingKey;
            this.done = done;
            this.deadline = deadline;
        }

        OutboxRecord record() {
            return record;
        }

        String exchange() {
            return exchange;
        }

        String routingKey() {
            return routingKey;
        }

        CompletableFuture<Void> done() {
            return done;
        }

        long deadline() {
            return deadline;
        }

        /** What the broker's return said of this record, or null if it was not returned. */
        synchronized DeliveryException returnedAs() {
            return returned;
        }

        synchronized boolean markReturned(DeliveryException reason) {
            if (returned != null) {
                return false;
            }
            returned = reason;
            return true;
        }
    }

    Confirms(Settler settler) {
        this.settler = settler;
    }

    /**
     * Tracks {@code record} under {@code sequence}, before it is published (its ack may come before
     * {@code basicPublish} returns).
     *
     * @return false if the channel has closed meanwhile: the caller fails the record itself
     */
    synchronized boolean add(long sequence, InFlight record) {
        if (closed) {
            return false;
        }
        inFlight.put(sequence, record);
        return true;
    }

    /** Forgets {@code sequence} without settling it (its publish failed; the caller settles it). */
    InFlight remove(long sequence) {
        return inFlight.remove(sequence);
    }

    /** The broker confirmed {@code sequence} (and, if {@code multiple}, every lower number). */
    void ack(long sequence, boolean multiple) {
        for (InFlight f : take(sequence, multiple)) {
            settler.settle(f, f.returnedAs());
        }
    }

    /** The broker refused {@code sequence} (and, if {@code multiple}, every lower number): retriable. */
    void nack(long sequence, boolean multiple) {
        for (InFlight f : take(sequence, multiple)) {
            DeliveryException returned = f.returnedAs();
            settler.settle(f, returned != null ? returned : DeliveryException.retriable("RabbitMQ refused (nack) "
                    + RabbitMqErrors.describe(f) + ": the node could not take responsibility for it (for example, a"
                    + " queue full with x-overflow=reject-publish, or an internal error)", null));
        }
    }

    /**
     * The broker returned a message it could not route (published {@code mandatory}): the record it belongs to —
     * the one with that message id or, without one, the lowest in flight to that exchange and routing key not
     * returned yet — fails permanently with {@code reason} when its ack comes (a return precedes its ack).
     *
     * @return whether a record in flight matched
     */
    boolean returned(String exchange, String routingKey, String messageId,
                     Function<InFlight, DeliveryException> reason) {
        for (InFlight f : inFlight.values()) {
            boolean same = f.exchange().equals(exchange) && f.routingKey().equals(routingKey)
                    && (messageId == null ? f.record().messageId() == null
                    : f.record().messageId() != null && messageId.equals(f.record().messageId().toString()));
            if (same && f.markReturned(reason.apply(f))) {
                return true;
            }
        }
        return false;
    }

    /** Fails the records whose deadline is before {@code nowNanos}; returns how many. */
    int expire(long nowNanos, Function<InFlight, DeliveryException> failure) {
        int n = 0;
        for (Map.Entry<Long, InFlight> e : inFlight.entrySet()) {
            if (nowNanos - e.getValue().deadline() > 0 && inFlight.remove(e.getKey(), e.getValue())) {
                settler.settle(e.getValue(), failure.apply(e.getValue()));
                n++;
            }
        }
        return n;
    }

    /**
     * The channel closed: refuses new records and fails every record in flight with what {@code failure} says of
     * it; returns how many.
     */
    int closeAndFailAll(Function<InFlight, DeliveryException> failure) {
        synchronized (this) {
            closed = true;
        }
        int n = 0;
        for (Long sequence : inFlight.keySet()) {
            InFlight f = inFlight.remove(sequence);
            if (f != null) {
                settler.settle(f, failure.apply(f));
                n++;
            }
        }
        return n;
    }

    /** The records in flight, a snapshot in sequence order. */
    List<InFlight> snapshot() {
        return new ArrayList<>(inFlight.values());
    }

    int size() {
        return inFlight.size();
    }

    private List<InFlight> take(long sequence, boolean multiple) {
        List<InFlight> taken = new ArrayList<>();
        if (multiple) {
            ConcurrentNavigableMap<Long, InFlight> head = inFlight.headMap(sequence, true);
            for (Long s : head.keySet()) {
                InFlight f = inFlight.remove(s);
                if (f != null) {
                    taken.add(f);
                }
            }
        } else {
            InFlight f = inFlight.remove(sequence);
            if (f != null) {
                taken.add(f);
            }
        }
        return taken;
    }
}
