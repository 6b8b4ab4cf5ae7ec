package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import dev.outbox.Inbox;
import dev.outbox.spi.Backoff;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Consumes RabbitMQ queues into a database through an {@link Inbox}, so that each message's effect is applied
 * exactly once although RabbitMQ (and the outbox before it) deliver at least once — as {@code KafkaInboxConsumer}
 * does for Kafka.
 *
 * <pre>{@code
 * RabbitMqInboxConsumer consumer = RabbitMqInboxConsumer.builder()
 *         .uri("amqp://app:secret@rabbit:5672/%2F")
 *         .queues(RabbitMqTopology.perKey("orders", 4).queues())
 *         .consumerName("billing")                 // the inbox's consumer name
 *         .dataSource(dataSource)                  // the database of the inbox and of the effects
 *         .inbox(inbox)                            // PostgresInbox or MySqlInbox
 *         .handler((connection, delivery, messageId) -> applyEffect(connection, delivery))
 *         .build();
 * consumer.start();
 * }</pre>
 *
 * <h2>What happens to a message</h2>
 * Deliveries of every queue go, in the order they arrive, to one thread ({@code outbox-inbox-<consumer>}), which for
 * each: opens a transaction, runs it through {@link Inbox#process} (which records its message id and runs the
 * handler if the id is new), commits, and only then acknowledges it (manual acks; prefetch {@link Builder#prefetch}).
 * <ul>
 *   <li><b>Message id</b>: the {@code message-id} property, as {@link RabbitMqMessageBroker} writes it. A message
 *       without one (another publisher's) gets a random id: it is applied, but a redelivery of it is not
 *       recognised.</li>
 *   <li><b>A crash or a lost connection</b> (the client's automatic recovery reconnects every second) before the
 *       acknowledgement: the node delivers the message again, the inbox
 *       recognises its id and it is skipped ({@link #duplicates()}). Deliveries of a connection that was lost and
 *       not yet worked on are dropped: the node delivers them again on the recovered one (the client's automatic
 *       recovery), in order.</li>
 *   <li><b>A handler that throws</b> (on a healthy connection): rolled back and retried with exponential backoff on
 *       the same message, which holds up its queue (per-key order); after {@link Builder#maxAttempts} failures it is
 *       written to the inbox's failed-messages table with the reason, acknowledged, and the queue moves on — never
 *       dropped, never redelivered in a loop.</li>
 *   <li><b>The database unreachable</b>: nothing counts as an attempt; the consumer waits with backoff and retries the
 *       same message. Its other deliveries wait unacknowledged meanwhile.</li>
 * </ul>
 *
 * <p>Thread-safe: {@link #start()} and {@link #close()} may be called from any thread; the handler runs on the
 * consumer's thread, one message at a time.
 */
public final class RabbitMqInboxConsumer implements AutoCloseable {
    /** Default {@link Builder#maxAttempts}. */
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    /** Default {@link Builder#prefetch}. */
    public static final int DEFAULT_PREFETCH = 50;
    private static final Logger log = LoggerFactory.getLogger(RabbitMqInboxConsumer.class);

    /** The effect of one message, on the inbox's transaction. */
    @FunctionalInterface
    public interface MessageHandler {
        /**
         * Applies the message's effect on {@code connection}, in the transaction that records {@code messageId};
         * must not commit, roll back or close it. Throwing rolls both back; the message is retried.
         *
         * @param connection the transaction's connection (auto-commit off); valid only during this call
         * @param delivery   the delivery: routing key (the record's key), properties and body; read the outbox's
         *                   value and headers with {@link RabbitMqHeaders}
         * @param messageId  the id the inbox records it under; never null
         * @throws Exception any failure of the effect: rolled back, retried, recorded as failed after the last attempt
         */
        void handle(java.sql.Connection connection, Delivery delivery, UUID messageId) throws Exception;
    }

    private record Work(Channel channel, long generation, Delivery delivery) {
    }

    private final ConnectionFactory factory;
    private final List<String> queues;
    private final String consumerName;
    private final int prefetch;
    private final InboxWorker inboxWork;
    private final BlockingQueue<Work> work = new LinkedBlockingQueue<>();
    private final CountDownLatch stop = new CountDownLatch(1);
    private final Thread worker;
    /** Increases when the connection is recovered: deliveries of an older generation are stale. */
    private volatile long generation;
    private volatile boolean closed;
    private Connection connection;

    private RabbitMqInboxConsumer(Builder b) {
        this.factory = RabbitMqSettings.forConsumer(b.factory);
        this.queues = List.copyOf(b.queues);
        this.consumerName = b.consumerName;
        this.prefetch = b.prefetch;
        this.inboxWork = new InboxWorker(consumerName, b.dataSource, b.inbox, b.handler, b.maxAttempts,
                Backoff.exponential(Duration.ofMillis(100), Duration.ofSeconds(5)),
                nanos -> stop.await(nanos, TimeUnit.NANOSECONDS));
        this.worker = new Thread(this::run, "outbox-inbox-" + consumerName);
        this.worker.setDaemon(true);
    }

    /**
     * Starts a builder; not thread-safe.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Connects, starts consuming every queue and the consumer's thread.
     *
     * @throws IOException if the node cannot be reached or refuses a queue (it must exist)
     * @throws IllegalStateException if already started or closed
     */
    public synchronized void start() throws IOException {
        if (connection != null || closed) {
            throw new IllegalStateException("inbox consumer " + consumerName + " was started or closed already");
        }
        try {
            connection = factory.newConnection("outbox-inbox-" + consumerName);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("connecting to RabbitMQ timed out", e);
        }
        ((Recoverable) connection).addRecoveryListener(new RecoveryListener() {
            @Override
            public void handleRecoveryStarted(Recoverable recoverable) {
                generation++; // what the lost connection delivered is delivered again on the new one
                work.clear();
            }

            @Override
            public void handleRecovery(Recoverable recoverable) {
                log.info("Inbox consumer {}: RabbitMQ connection recovered", consumerName);
            }
        });
        for (String queue : queues) {
            Channel channel = connection.createChannel();
            channel.basicQos(prefetch);
            channel.basicConsume(queue, false, "outbox-inbox-" + consumerName + "-" + queue,
                    (tag, delivery) -> work.add(new Work(channel, generation, delivery)), tag -> { });
        }
        worker.start();
        log.info("Inbox consumer {} consuming {} from {}", consumerName, queues, RabbitMqSettings.target(factory));
    }

    /**
     * Messages whose effect was committed.
     *
     * @return the count since start
     */
    public long applied() {
        return inboxWork.applied();
    }

    /**
     * Messages skipped because the inbox had recorded their id already (redeliveries, or the outbox publishing again).
     *
     * @return the count since start
     */
    public long duplicates() {
        return inboxWork.duplicates();
    }

    /**
     * Messages written to the failed-messages table.
     *
     * @return the count since start
     */
    public long failed() {
        return inboxWork.failed();
    }

    private void run() {
        while (!closed) {
            try {
                Work w = work.poll(100, TimeUnit.MILLISECONDS);
                if (w != null) {
                    inboxWork.process(w.delivery(), () -> !closed && w.generation() == generation,
                            () -> acknowledge(w));
                }
            } catch (InterruptedException e) {
                break;
            } catch (RuntimeException e) {
                log.error("Inbox consumer {}: unexpected failure; going on", consumerName, e);
            }
        }
        inboxWork.closeDatabase();
    }

    private void acknowledge(Work w) {
        if (w.generation() != generation) {
            return; // its channel was recovered since: the node delivers it again, and the inbox knows its id
        }
        try {
            w.channel().basicAck(w.delivery().getEnvelope().getDeliveryTag(), false);
        } catch (IOException | AlreadyClosedException e) {
            log.debug("Inbox consumer {}: acknowledgement lost ({}); the message comes again and is skipped",
                    consumerName, e.toString());
        }
    }

    /**
     * Stops consuming: waits at most {@code timeout} for the message being worked on, then closes the connection
     * (unacknowledged messages go back to their queues). Idempotent.
     *
     * @param timeout the longest wait
     * @return whether the consumer's thread ended within it
     */
    public synchronized boolean close(Duration timeout) {
        closed = true;
        stop.countDown();
        boolean ended = true;
        if (worker.isAlive()) {
            try {
                worker.join(Math.max(1, timeout.toMillis()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            ended = !worker.isAlive();
        }
        if (connection != null) {
            connection.abort((int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis())));
        }
        return ended;
    }

    /** Closes with a bound of 30 s. */
    @Override
    public void close() {
        close(Duration.ofSeconds(30));
    }

    /** Builds a {@link RabbitMqInboxConsumer}. Not thread-safe. */
    public static final class Builder {
        private ConnectionFactory factory;
        private List<String> queues;
        private String consumerName;
        private DataSource dataSource;
        private Inbox inbox;
        private MessageHandler handler;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private int prefetch = DEFAULT_PREFETCH;

        private Builder() {
        }

        /**
         * Connects with this AMQP URI.
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
         * Connects with a copy of this factory; the client's automatic recovery is turned on in the copy.
         *
         * @param factory the factory; not null
         * @return this builder
         */
        public Builder connectionFactory(ConnectionFactory factory) {
            this.factory = Objects.requireNonNull(factory, "factory");
            return this;
        }

        /**
         * The queues to consume; they must exist (see {@link RabbitMqTopology}).
         *
         * @param queues one or more queue names
         * @return this builder
         * @throws IllegalArgumentException if there is none or one is blank
         */
        public Builder queues(List<String> queues) {
            if (queues == null || queues.isEmpty() || queues.stream().anyMatch(q -> q == null || q.isBlank())) {
                throw new IllegalArgumentException("queues must be one or more names, not blank: " + queues);
            }
            this.queues = List.copyOf(queues);
            return this;
        }

        /**
         * The inbox's consumer name; required.
         *
         * @param name see {@link Inbox#validateConsumer}
         * @return this builder
         * @throws IllegalArgumentException if it is not a valid consumer name
         */
        public Builder consumerName(String name) {
            Inbox.validateConsumer(name);
            this.consumerName = name;
            return this;
        }

        /**
         * The database of the inbox and of the effects; required.
         *
         * @param dataSource not null
         * @return this builder
         */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
            return this;
        }

        /**
         * The inbox; required.
         *
         * @param inbox not null
         * @return this builder
         */
        public Builder inbox(Inbox inbox) {
            this.inbox = Objects.requireNonNull(inbox, "inbox");
            return this;
        }

        /**
         * The effect of each message; required.
         *
         * @param handler runs on the consumer's thread, one message at a time
         * @return this builder
         */
        public Builder handler(MessageHandler handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /**
         * How many times the handler may fail on a message before it is recorded as failed; default 5.
         *
         * @param maxAttempts 1 to 100
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1 || maxAttempts > 100) {
                throw new IllegalArgumentException("maxAttempts must be 1 to 100, was " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * How many unacknowledged messages the node may deliver ahead, per queue; default 50.
         *
         * @param prefetch 1 to 65,535
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder prefetch(int prefetch) {
            if (prefetch < 1 || prefetch > 65_535) {
                throw new IllegalArgumentException("prefetch must be 1 to 65535, was " + prefetch);
            }
            this.prefetch = prefetch;
            return this;
        }

        /**
         * Builds the consumer; {@link RabbitMqInboxConsumer#start()} starts it.
         *
         * @return a new consumer
         * @throws IllegalArgumentException naming what is missing
         */
        public RabbitMqInboxConsumer build() {
            for (Object[] required : new Object[][]{{"uri or connectionFactory", factory}, {"queues", queues},
                    {"consumerName", consumerName}, {"dataSource", dataSource}, {"inbox", inbox},
                    {"handler", handler}}) {
                if (required[1] == null) {
                    throw new IllegalArgumentException("RabbitMQ inbox consumer needs " + required[0]);
                }
            }
            return new RabbitMqInboxConsumer(this);
        }
    }
}
