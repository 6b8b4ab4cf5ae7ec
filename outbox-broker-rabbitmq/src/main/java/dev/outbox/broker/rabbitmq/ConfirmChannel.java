package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ShutdownSignalException;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.DeliveryException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The broker's connection and its one publishing channel in confirm mode, kept open: when either closes, the
 * records in flight on the channel fail at once ({@link RabbitMqErrors#channelClosed}) and a thread of its own
 * ({@code outbox-rabbitmq-connection}) opens a new channel, and a new connection if that one is gone too, retrying
 * with a growing delay (100 ms to 5 s) for as long as it takes. The same thread fails records whose confirm is
 * overdue. While there is no channel, {@link #publish} fails records at once as an outage: it never waits for a
 * connection.
 *
 * <p>One channel, not a pool: publishing on one connection goes through one socket whatever the number of channels,
 * and a publish only writes its frames to the socket's buffer, so the lock that serialises publishes is held for
 * microseconds (the client takes a lock of its own per write anyway); one
 * channel also keeps every record in flight in one publish order, so that a record retried on a new channel can
 * never be overtaken by an older copy still on the old one (the old channel is closed first).
 *
 * <p>Thread-safe.
 */
final class ConfirmChannel {
    private static final Logger log = LoggerFactory.getLogger(ConfirmChannel.class);
    /** How long a failed reopen waits before the next: 100 ms, doubling up to 5 s. */
    private static final Backoff REOPEN = Backoff.exponential(Duration.ofMillis(100), Duration.ofSeconds(5));

    private final ConnectionFactory factory;
    private final String name;
    private final String target;
    private final Duration confirmTimeout;
    private final Confirms.Settler settler;
    /** Told of every channel close, e.g. to forget an exchange the node says is missing. */
    private final Consumer<ShutdownSignalException> onClose;
    private final Object publishLock = new Object();
    private final Thread thread;

    private volatile Connection connection;
    /** The open channel and its records in flight, or null while there is none. */
    private volatile Session session;
    /** Why there is no channel, for the records that fail meanwhile. */
    private volatile String down = "not connected yet";
    /** Why the node blocks publishers (a resource alarm), or null. */
    private volatile String blocked;
    private volatile boolean closed;

    private record Session(Channel channel, Confirms confirms) {
    }

    ConfirmChannel(ConnectionFactory factory, String name, String target, Duration confirmTimeout,
                   Confirms.Settler settler, Consumer<ShutdownSignalException> onClose) {
        this.factory = factory;
        this.name = name;
        this.target = target;
        this.confirmTimeout = confirmTimeout;
        this.settler = settler;
        this.onClose = onClose;
        this.thread = new Thread(this::run, "outbox-rabbitmq-connection");
        this.thread.setDaemon(true);
    }

    /** Opens the connection once (bounded by the factory's timeouts), then keeps it open on a thread of its own. */
    void start() {
        try {
            open();
        } catch (IOException | TimeoutException | RuntimeException e) {
            down = "cannot connect to " + target + ": " + e;
            log.warn("RabbitMQ broker cannot connect to {} yet ({}); retrying in the background", target, e.toString());
        }
        thread.start();
    }

    /** The current connection, or null (for the exchange checks). */
    Connection connection() {
        Connection c = connection;
        return c != null && c.isOpen() ? c : null;
    }

    /**
     * Publishes {@code f} mandatory, tracked by its sequence number; a record that cannot be published now is
     * settled at once as an outage. Blocks only as long as the client takes to enqueue the frame.
     */
    void publish(Confirms.InFlight f, AMQP.BasicProperties properties, byte[] body) {
        synchronized (publishLock) {
            Session s = session;
            if (s == null) {
                settler.settle(f, DeliveryException.outage("RabbitMQ is unavailable (" + down + "); "
                        + RabbitMqErrors.describe(f) + " not sent", null));
                return;
            }
            String alarm = blocked;
            if (alarm != null) {
                settler.settle(f, DeliveryException.outage("RabbitMQ blocks publishing (" + alarm + "); "
                        + RabbitMqErrors.describe(f) + " not sent", null));
                return;
            }
            long sequence = s.channel().getNextPublishSeqNo();
            if (!s.confirms().add(sequence, f)) {
                settler.settle(f, DeliveryException.outage("RabbitMQ channel closed; " + RabbitMqErrors.describe(f)
                        + " not sent", null));
                return;
            }
            try {
                s.channel().basicPublish(f.exchange(), f.routingKey(), true, properties, body);
            } catch (IOException | AlreadyClosedException e) {
                if (s.confirms().remove(sequence) != null) {
                    settler.settle(f, DeliveryException.outage("RabbitMQ did not take " + RabbitMqErrors.describe(f)
                            + ": " + e, e));
                }
            }
        }
    }

    /** Records in flight on the current channel. */
    int inFlight() {
        Session s = session;
        return s == null ? 0 : s.confirms().size();
    }

    private void open() throws IOException, TimeoutException {
        Connection c = connection;
        if (c == null || !c.isOpen()) {
            c = factory.newConnection(name);
            c.addBlockedListener(reason -> {
                blocked = reason;
                log.warn("RabbitMQ blocks publishing on {}: {}", target, reason);
            }, () -> {
                blocked = null;
                log.info("RabbitMQ unblocked publishing on {}", target);
            });
            Connection opened = c;
            c.addShutdownListener(cause -> {
                if (!cause.isInitiatedByApplication()) {
                    log.warn("RabbitMQ connection to {} lost: {}", target, RabbitMqErrors.reason(cause));
                }
                blocked = null;
                if (connection == opened) {
                    connection = null;
                }
            });
            connection = c;
        }
        Channel channel = c.createChannel();
        if (channel == null) {
            throw new IOException("RabbitMQ has no channel left on the connection to " + target);
        }
        channel.confirmSelect();
        Confirms confirms = new Confirms(settler);
        Session s = new Session(channel, confirms);
        channel.addConfirmListener(confirms::ack, confirms::nack);
        channel.addReturnListener(r -> confirms.returned(r.getExchange(), r.getRoutingKey(),
                r.getProperties().getMessageId(), f -> DeliveryException.permanent("RabbitMQ cannot route "
                        + RabbitMqErrors.describe(f) + ": no queue is bound for it (" + r.getReplyCode() + " "
                        + r.getReplyText() + ")", null)));
        channel.addShutdownListener(cause -> lost(s, cause));
        session = s;
        if (!channel.isOpen()) { // closed before the listener was added
            lost(s, channel.getCloseReason());
        }
    }

    private void lost(Session s, ShutdownSignalException cause) {
        synchronized (publishLock) {
            if (session == s) {
                session = null;
                down = "channel closed: " + RabbitMqErrors.reason(cause);
            }
        }
        int failed = s.confirms().closeAndFailAll(f -> RabbitMqErrors.channelClosed(f, cause));
        if (!cause.isInitiatedByApplication()) {
            log.warn("RabbitMQ {} closed ({}); {} record(s) in flight failed; reopening", cause.isHardError()
                    ? "connection" : "channel", RabbitMqErrors.reason(cause), failed);
        }
        onClose.accept(cause);
        LockSupport.unpark(thread);
    }

    private void run() {
        long tick = Math.max(TimeUnit.MILLISECONDS.toNanos(10),
                Math.min(TimeUnit.MILLISECONDS.toNanos(100), confirmTimeout.toNanos() / 4));
        Backoff.Sequence retries = REOPEN.sequence();
        long nextAttempt = System.nanoTime();
        long downSince = 0;
        while (!closed) {
            Session s = session;
            long now = System.nanoTime();
            if (s != null) {
                s.confirms().expire(now, f -> DeliveryException.outage("RabbitMQ did not confirm "
                        + RabbitMqErrors.describe(f) + " within " + confirmTimeout.toMillis() + " ms", null));
                retries.reset();
                downSince = 0;
            } else if (now - nextAttempt >= 0) {
                downSince = downSince == 0 ? now : downSince;
                try {
                    open();
                    log.info("RabbitMQ broker publishing to {} again after {} ms", target,
                            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - downSince));
                    continue;
                } catch (IOException | TimeoutException | RuntimeException e) {
                    down = "cannot connect to " + target + ": " + e;
                    log.debug("RabbitMQ reconnect to {} failed: {}", target, e.toString());
                    nextAttempt = System.nanoTime() + retries.next().toNanos();
                }
            }
            LockSupport.parkNanos(this, tick);
        }
    }

    /**
     * Stops reopening and closes the connection within {@code timeout}; records still in flight fail (their
     * channel closes).
     */
    void close(Duration timeout) {
        closed = true;
        LockSupport.unpark(thread);
        try {
            thread.join(Math.max(1, timeout.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Connection c = connection;
        if (c != null) {
            c.abort(AMQP.REPLY_SUCCESS, "outbox broker closed", (int) Math.min(Integer.MAX_VALUE,
                    Math.max(1, timeout.toMillis())));
        }
        Session s = session;
        if (s != null) { // abort notifies the channel's listener; this catches one opened meanwhile
            s.confirms().closeAndFailAll(f -> DeliveryException.retriable("RabbitMQ broker closed before "
                    + RabbitMqErrors.describe(f) + " was confirmed", null));
        }
    }
}
