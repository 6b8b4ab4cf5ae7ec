package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ShutdownSignalException;
import dev.outbox.spi.DeliveryException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Which exchanges are known to exist, and the checks that find out, off the sender's thread. Publishing to an
 * exchange that does not exist makes RabbitMQ close the channel, failing every record in flight on it; so a record
 * to an exchange not known yet waits here while one thread ({@code outbox-rabbitmq-exchange-check}) declares the
 * exchange passively on a channel of its own, and is then published (it exists) or fails permanently naming the
 * exchange (it does not). Records to known exchanges never wait (G6). An exchange deleted later is forgotten when
 * a publish to it closes the channel ({@link #forget}), and checked again by its next record.
 *
 * <p>Thread-safe.
 */
final class RabbitMqExchanges {
    private static final Logger log = LoggerFactory.getLogger(RabbitMqExchanges.class);

    private final Set<String> known = ConcurrentHashMap.newKeySet();
    /** Records waiting for their exchange's check, by exchange; guarded by {@code this}. */
    private final Map<String, List<Waiting>> waiting = new HashMap<>();
    private final Supplier<Connection> connection;
    private final ExecutorService checker;
    /** The checking channel; used on the checker thread only. */
    private Channel channel;
    private boolean closed;

    /** A record waiting for its exchange's check: what to do when it exists, and when it does not. */
    private record Waiting(Runnable publish, Consumer<DeliveryException> fail) {
    }

    /**
     * @param connection the current connection, or null while there is none
     */
    RabbitMqExchanges(Supplier<Connection> connection) {
        this.connection = connection;
        this.checker = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "outbox-rabbitmq-exchange-check");
            t.setDaemon(true);
            return t;
        });
    }

    /** Whether records to {@code exchange} can be published at once ("" is the default exchange: always). */
    boolean isKnown(String exchange) {
        return exchange.isEmpty() || known.contains(exchange);
    }

    /** {@code exchange} may be gone (a publish to it closed the channel with 404): check it again. */
    void forget(String exchange) {
        known.remove(exchange);
    }

    /**
     * Runs {@code publish} (on the checker thread) once {@code exchange} is found to exist, or {@code fail} with a
     * permanent failure if it does not, or with an outage if the check fails for another reason.
     */
    void whenChecked(String exchange, Runnable publish, Consumer<DeliveryException> fail) {
        synchronized (this) {
            if (!closed) {
                List<Waiting> list = waiting.get(exchange);
                if (list != null) {
                    list.add(new Waiting(publish, fail));
                    return;
                }
                list = new ArrayList<>();
                list.add(new Waiting(publish, fail));
                waiting.put(exchange, list);
                try {
                    checker.execute(() -> check(exchange));
                    return;
                } catch (RejectedExecutionException e) {
                    waiting.remove(exchange);
                }
            }
        }
        fail.accept(DeliveryException.outage("RabbitMQ broker is closed", null));
    }

    private void check(String exchange) {
        DeliveryException failure;
        try {
            checkingChannel().exchangeDeclarePassive(exchange);
            known.add(exchange);
            for (Waiting w : take(exchange)) {
                w.publish().run();
            }
            return;
        } catch (IOException | ShutdownSignalException e) {
            ShutdownSignalException closed = e instanceof ShutdownSignalException s ? s
                    : e.getCause() instanceof ShutdownSignalException s ? s : null;
            if (closed != null && !closed.isHardError()
                    && RabbitMqErrors.replyCode(closed) == RabbitMqErrors.NOT_FOUND) {
                failure = DeliveryException.permanent("RabbitMQ exchange '" + exchange + "' does not exist ("
                        + RabbitMqErrors.reason(closed) + ")", closed);
            } else {
                failure = DeliveryException.outage("RabbitMQ could not check that exchange '" + exchange
                        + "' exists: " + (closed != null ? RabbitMqErrors.reason(closed) : e.toString()), e);
            }
        } catch (RuntimeException e) {
            failure = DeliveryException.outage("RabbitMQ could not check that exchange '" + exchange + "' exists: "
                    + e, e);
        }
        for (Waiting w : take(exchange)) {
            w.fail().accept(failure);
        }
    }

    private Channel checkingChannel() throws IOException {
        if (channel != null && channel.isOpen()) {
            return channel;
        }
        Connection c = connection.get();
        if (c == null || !c.isOpen()) {
            throw new IOException("not connected to RabbitMQ");
        }
        channel = c.createChannel();
        if (channel == null) {
            throw new IOException("RabbitMQ has no channel left on the connection");
        }
        return channel;
    }

    private synchronized List<Waiting> take(String exchange) {
        List<Waiting> list = waiting.remove(exchange);
        return list == null ? List.of() : list;
    }

    /** Stops checking: records still waiting fail as an outage; waits at most {@code timeoutMillis} for a check. */
    void close(long timeoutMillis) {
        List<Waiting> left = new ArrayList<>();
        synchronized (this) {
            closed = true;
            waiting.values().forEach(left::addAll);
            waiting.clear();
        }
        checker.shutdownNow();
        try {
            if (!checker.awaitTermination(Math.max(0, timeoutMillis), TimeUnit.MILLISECONDS)) {
                log.warn("A RabbitMQ exchange check was still running when the broker closed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Waiting w : left) {
            w.fail().accept(DeliveryException.outage("RabbitMQ broker closed before the record's exchange was"
                    + " checked", null));
        }
    }
}
