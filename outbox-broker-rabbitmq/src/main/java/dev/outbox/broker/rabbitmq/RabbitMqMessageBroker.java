package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ShutdownSignalException;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Publishes outbox records to RabbitMQ with publisher confirms, through the official Java client.
 *
 * <pre>{@code
 * RabbitMqMessageBroker broker = RabbitMqMessageBroker.builder()
 *         .uri("amqp://app:secret@rabbit:5672/%2F")   // or .connectionFactory(f) for TLS, credentials providers, ...
 *         .build();
 * }</pre>
 *
 * <h2>What is sent</h2>
 * A record goes to the exchange its topic names (or {@link Builder#exchangeMapping another}), with its key as the
 * routing key, its value as the body, persistent, its headers as AMQP headers and its message id as the
 * {@code message-id} property; {@link RabbitMqHeaders} says exactly how, and reads it back.
 *
 * <h2>What is enforced, and why</h2>
 * <ul>
 *   <li><b>Publisher confirms</b>: a record's stage completes when the node confirms it (for a durable queue: once
 *       it is on disk), tracked asynchronously by publish sequence number; never on hope.</li>
 *   <li><b>Mandatory publishing</b>: a record that no queue is bound for is returned by the node and fails
 *       permanently, naming the exchange and routing key (it is parked with that reason), instead of being
 *       confirmed and dropped.</li>
 *   <li><b>Bounded in time</b>: every record completes within {@link Builder#confirmTimeout} (an outage if not
 *       confirmed by then); connecting, the handshake, opening a channel, checking an exchange and closing are each
 *       bounded by {@link Builder#operationTimeout}; a lost peer is noticed by heartbeats
 *       ({@link Builder#heartbeat}). A publish writes its frames to the socket on the caller's thread: it blocks only
 *       when the socket's buffer is full, that is when the node stopped reading — for a resource alarm the node says
 *       so first ({@code connection.blocked}) and records fail at once as an outage instead; a node that went silent
 *       is given up after about two heartbeats, which ends the blocked write.</li>
 *   <li><b>Recovery is the broker's own</b>: the client's automatic recovery is turned off (on a copy of a given
 *       factory), because a lost channel must fail what it had in flight before anything is sent again; the broker
 *       reopens its channel and connection itself.</li>
 * </ul>
 *
 * <h2>Failures</h2>
 * Permanent: no queue bound (returned), an exchange that does not exist or may not be written to, a routing key or
 * exchange name longer than AMQP's 255 bytes, a header whose name the adapter reserves, a value larger than
 * {@link Builder#maxMessageSize}. Retriable: a nack. An outage (retried for as long as it lasts, never counted,
 * never parked): a lost connection or channel (everything in flight on it fails at once), no connection yet, a
 * confirm overdue, publishing blocked by a resource alarm.
 *
 * <p>Thread-safe: {@link #send} may be called from any thread (publishes are serialised on one channel); stages
 * complete on the client's I/O thread, the broker's connection thread or, for a failure found before sending, the
 * caller's. Do not call {@link #close} from a completion.
 */
public final class RabbitMqMessageBroker implements MessageBroker {
    /** Default {@link Builder#confirmTimeout}: 8 s, as the Kafka adapter's delivery timeout. */
    public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(8);
    /** Largest {@link Builder#confirmTimeout} accepted: 2 minutes. */
    public static final Duration MAX_CONFIRM_TIMEOUT = Duration.ofMinutes(2);
    /** Default {@link Builder#operationTimeout}: 5 s. */
    public static final Duration DEFAULT_OPERATION_TIMEOUT = Duration.ofSeconds(5);
    /** Default {@link Builder#heartbeat}: 10 s (a lost peer is noticed after about two of them). */
    public static final Duration DEFAULT_HEARTBEAT = Duration.ofSeconds(10);
    /** Default {@link Builder#maxMessageSize}: 128 MiB, RabbitMQ's own default {@code max_message_size}. */
    public static final int DEFAULT_MAX_MESSAGE_SIZE = 128 * 1024 * 1024;
    /** AMQP's limit on exchange names and routing keys, in bytes (UTF-8). */
    static final int MAX_SHORT_STRING = 255;

    private static final Logger log = LoggerFactory.getLogger(RabbitMqMessageBroker.class);

    private final Function<String, String> exchangeMapping;
    private final Duration confirmTimeout;
    private final int maxMessageSize;
    private final String target;
    private final Set<CompletableFuture<Void>> pending = ConcurrentHashMap.newKeySet();
    private final RabbitMqExchanges exchanges;
    private final ConfirmChannel channel;
    private volatile boolean closed;
    private boolean closeDone;

    private RabbitMqMessageBroker(Builder b, ConnectionFactory factory) {
        this.exchangeMapping = b.exchangeMapping;
        this.confirmTimeout = b.confirmTimeout;
        this.maxMessageSize = b.maxMessageSize;
        this.target = RabbitMqSettings.target(factory);
        this.channel = new ConfirmChannel(factory, b.connectionName, target, confirmTimeout, this::settle,
                this::channelClosed);
        this.exchanges = new RabbitMqExchanges(channel::connection);
        channel.start();
        log.info("RabbitMQ broker publishing to {} (confirm timeout {} ms)", target, confirmTimeout.toMillis());
    }

    /**
     * Starts a builder; not thread-safe.
     *
     * @return a new builder with the defaults and no connection set
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Every record completes within this bound.
     *
     * @return the confirm timeout
     */
    public Duration confirmTimeout() {
        return confirmTimeout;
    }

    /**
     * Records sent and not yet completed.
     *
     * @return a snapshot, safe to read from any thread
     */
    public int pendingRecords() {
        return pending.size();
    }

    /**
     * {@inheritDoc}
     *
     * <p>A record to an exchange not known to exist yet waits, off the caller's thread, while one thread checks
     * the exchange ({@code exchange.declare}, passive); records to known exchanges are published at once.
     */
    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        Objects.requireNonNull(record, "record");
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (closed) {
            done.completeExceptionally(DeliveryException.outage("RabbitMQ broker is closed; "
                    + RabbitMqErrors.describe(record) + " not sent", null));
            return done;
        }
        String exchange;
        AMQP.BasicProperties properties;
        try {
            exchange = exchangeMapping.apply(record.topic());
            check("exchange", exchange, record);
            check("routing key", record.key(), record);
            byte[] value = record.message().value();
            if (value != null && value.length > maxMessageSize) {
                throw new IllegalArgumentException("its value of " + value.length + " bytes is larger than the "
                        + maxMessageSize + " bytes RabbitMQ accepts (maxMessageSize)");
            }
            properties = RabbitMqHeaders.properties(record);
        } catch (RuntimeException e) {
            done.completeExceptionally(DeliveryException.permanent("RabbitMQ can never accept "
                    + RabbitMqErrors.describe(record) + ": " + e.getMessage(), e));
            return done;
        }
        pending.add(done);
        byte[] body = record.message().value() == null ? new byte[0] : record.message().value();
        Confirms.InFlight f = new Confirms.InFlight(record, exchange, record.key(), done,
                System.nanoTime() + confirmTimeout.toNanos());
        if (exchanges.isKnown(exchange)) {
            channel.publish(f, properties, body);
        } else {
            exchanges.whenChecked(exchange, () -> channel.publish(f, properties, body), e -> settle(f, e));
        }
        return done;
    }

    private static void check(String what, String name, OutboxRecord record) {
        if (name == null) {
            throw new IllegalArgumentException("the exchange mapping gave no exchange for topic '"
                    + record.topic() + "'");
        }
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_SHORT_STRING) {
            throw new IllegalArgumentException("its " + what + " is " + bytes + " bytes long, more than AMQP's "
                    + MAX_SHORT_STRING);
        }
    }

    /** Completes a record's stage, then forgets it as pending (so that flush never misses one in between). */
    private void settle(Confirms.InFlight f, DeliveryException failure) {
        if (failure == null) {
            f.done().complete(null);
            if (log.isDebugEnabled()) {
                log.debug("{} confirmed", RabbitMqErrors.describe(f));
            }
        } else {
            f.done().completeExceptionally(failure);
        }
        pending.remove(f.done());
    }

    private void channelClosed(ShutdownSignalException cause) {
        if (!cause.isHardError() && (RabbitMqErrors.replyCode(cause) == RabbitMqErrors.NOT_FOUND
                || RabbitMqErrors.replyCode(cause) == RabbitMqErrors.ACCESS_REFUSED)) {
            String exchange = RabbitMqErrors.exchangeNamed(RabbitMqErrors.replyText(cause));
            if (exchange != null) {
                exchanges.forget(exchange);
            }
        }
    }

    @Override
    public boolean flush(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        CompletableFuture<?>[] snapshot = pending.toArray(new CompletableFuture<?>[0]);
        if (snapshot.length == 0) {
            return true;
        }
        try {
            CompletableFuture.allOf(snapshot).handle((v, e) -> null)
                    .get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
            return true;
        } catch (java.util.concurrent.TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException e) {
            throw new IllegalStateException("unreachable: failures are handled", e);
        }
    }

    /**
     * Stops accepting records, waits at most {@code timeout} for the confirms of those in flight, then closes the
     * connection: records still pending fail, and when this method returns the broker's threads have ended.
     * Idempotent.
     */
    @Override
    public synchronized void close(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        closed = true;
        if (closeDone) {
            return;
        }
        long started = System.nanoTime();
        Duration bound = timeout.isNegative() ? Duration.ZERO : timeout;
        flush(bound);
        long left = Math.max(100, bound.toMillis() - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        exchanges.close(left);
        channel.close(Duration.ofMillis(left));
        int abandoned = 0;
        for (CompletableFuture<Void> f : pending) {
            if (f.completeExceptionally(DeliveryException.retriable("RabbitMQ broker closed before the record was"
                    + " confirmed", null))) {
                abandoned++;
            }
            pending.remove(f);
        }
        closeDone = true;
        log.info("RabbitMQ broker closed in {} ms{}", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                abandoned == 0 ? "" : "; " + abandoned + " unconfirmed record(s) failed");
    }

    @Override
    public String toString() {
        return "RabbitMqMessageBroker{" + target + ", confirmTimeout=" + confirmTimeout + ", closed=" + closed + '}';
    }

    /**
     * Builds a {@link RabbitMqMessageBroker}. Not thread-safe.
     */
    public static final class Builder {
        private ConnectionFactory factory;
        private Function<String, String> exchangeMapping = Function.identity();
        private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
        private Duration operationTimeout = DEFAULT_OPERATION_TIMEOUT;
        private Duration heartbeat = DEFAULT_HEARTBEAT;
        private int maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE;
        private String connectionName = "outbox";

        private Builder() {
        }

        /**
         * Connects with this AMQP URI ({@code amqp://user:password@host:port/vhost}, {@code amqps://} for TLS with
         * the JVM's trust store); replaces an earlier {@link #connectionFactory}.
         *
         * @param uri the URI; not blank
         * @return this builder
         * @throws IllegalArgumentException if it is not a valid AMQP URI (the message leaves the password out)
         */
        public Builder uri(String uri) {
            this.factory = RabbitMqSettings.fromUri(uri);
            return this;
        }

        /**
         * Shorthand for {@link #uri(String)}.
         *
         * @param uri the URI; not null
         * @return this builder
         * @throws IllegalArgumentException if it is not a valid AMQP URI
         */
        public Builder uri(URI uri) {
            return uri(Objects.requireNonNull(uri, "uri").toString());
        }

        /**
         * Connects with a copy of this factory (TLS, credentials, client properties, ...); replaces an earlier
         * {@link #uri}. On the copy, automatic recovery is turned off (the broker recovers itself), and the timeouts,
         * heartbeat and thread factory are set from this builder.
         *
         * @param factory the factory; not null, copied by {@link #build()}
         * @return this builder
         */
        public Builder connectionFactory(ConnectionFactory factory) {
            this.factory = Objects.requireNonNull(factory, "factory");
            return this;
        }

        /**
         * Which exchange a topic's records go to; default the topic's own name. {@code t -> ""} sends every record to
         * the default exchange, which routes by queue name (the routing key, i.e. the record's key).
         *
         * @param mapping from topic to exchange name; not null. A null result, or one longer than 255 bytes, fails
         *                that record permanently
         * @return this builder
         */
        public Builder exchangeMapping(Function<String, String> mapping) {
            this.exchangeMapping = Objects.requireNonNull(mapping, "mapping");
            return this;
        }

        /**
         * The bound on every send: a record not confirmed within it fails as an outage; default
         * {@link #DEFAULT_CONFIRM_TIMEOUT}.
         *
         * @param timeout positive, at most {@link #MAX_CONFIRM_TIMEOUT}
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder confirmTimeout(Duration timeout) {
            this.confirmTimeout = RabbitMqSettings.range("confirmTimeout", timeout, Duration.ofMillis(1),
                    MAX_CONFIRM_TIMEOUT);
            return this;
        }

        /**
         * The bound on connecting, the AMQP handshake, opening a channel, checking an exchange and closing; default
         * {@link #DEFAULT_OPERATION_TIMEOUT}.
         *
         * @param timeout at least 100 ms, at most 2 minutes
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder operationTimeout(Duration timeout) {
            this.operationTimeout = RabbitMqSettings.range("operationTimeout", timeout, Duration.ofMillis(100),
                    Duration.ofMinutes(2));
            return this;
        }

        /**
         * The AMQP heartbeat asked of the node: a peer silent for about two of them is taken as lost; default
         * {@link #DEFAULT_HEARTBEAT}.
         *
         * @param heartbeat 1 s to 10 minutes, whole seconds
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder heartbeat(Duration heartbeat) {
            this.heartbeat = RabbitMqSettings.range("heartbeat", heartbeat, Duration.ofSeconds(1),
                    Duration.ofMinutes(10));
            return this;
        }

        /**
         * The largest value sent; a larger one fails permanently before it is sent. Default
         * {@link #DEFAULT_MAX_MESSAGE_SIZE}; set the node's {@code max_message_size} here if it is lower.
         *
         * @param bytes positive
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is not positive
         */
        public Builder maxMessageSize(int bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("maxMessageSize must be positive, was " + bytes);
            }
            this.maxMessageSize = bytes;
            return this;
        }

        /**
         * The connection's name, as the node's management shows it; default {@code outbox}.
         *
         * @param name not blank
         * @return this builder
         * @throws IllegalArgumentException if it is blank
         */
        public Builder connectionName(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("connectionName must not be blank: '" + name + "'");
            }
            this.connectionName = name;
            return this;
        }

        /**
         * Creates the broker and connects (at most {@link #operationTimeout}); if the node cannot be reached, the
         * broker is returned all the same and keeps trying in the background, failing records as an outage until
         * it is connected.
         *
         * @return a new broker; {@link RabbitMqMessageBroker#close()} it when done
         * @throws IllegalArgumentException if no {@link #uri} or {@link #connectionFactory} was given
         */
        public RabbitMqMessageBroker build() {
            if (factory == null) {
                throw new IllegalArgumentException("RabbitMQ broker needs a uri or a connectionFactory");
            }
            return new RabbitMqMessageBroker(this, RabbitMqSettings.forPublisher(factory, operationTimeout, heartbeat));
        }
    }
}
