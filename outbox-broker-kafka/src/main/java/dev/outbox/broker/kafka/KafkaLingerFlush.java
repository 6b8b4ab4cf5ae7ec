package dev.outbox.broker.kafka;

import org.apache.kafka.clients.producer.Producer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * What {@link KafkaMessageBroker#sendPending()} does for the idempotent producer: flushes it on a thread of its own
 * ({@code outbox-kafka-send-pending}, started by the first request, one per broker), so that the batches it holds back
 * for {@code linger.ms} become ready at once and the caller does not wait. Requests made while a flush is under way
 * are served by one flush after it. Thread-safe.
 */
final class KafkaLingerFlush {
    private static final Logger log = LoggerFactory.getLogger(KafkaLingerFlush.class);

    private final Producer<String, byte[]> producer;
    /** Set by {@link #request}, taken by the flushing thread. */
    private final AtomicBoolean flushNow = new AtomicBoolean();
    private volatile boolean closed;
    private Thread thread;

    KafkaLingerFlush(Producer<String, byte[]> producer) {
        this.producer = producer;
    }

    /** Asks for a flush; returns at once. */
    void request() {
        if (!closed && flushNow.compareAndSet(false, true)) {
            LockSupport.unpark(thread());
        }
    }

    /** Ends the flushing thread after the flush under way, if any. */
    synchronized void close() {
        closed = true;
        if (thread != null) {
            LockSupport.unpark(thread);
        }
    }

    private synchronized Thread thread() {
        if (thread == null) {
            thread = new Thread(this::run, "outbox-kafka-send-pending");
            thread.setDaemon(true);
            thread.start();
        }
        return thread;
    }

    private void run() {
        while (!closed) {
            if (!flushNow.getAndSet(false)) {
                LockSupport.park(this);
                continue;
            }
            try {
                producer.flush(); // waits for the acknowledgements too, on this thread only
            } catch (RuntimeException e) {
                if (!closed) {
                    log.debug("flushing the Kafka producer failed", e);
                }
            }
        }
    }
}
