package dev.outbox.handlers;

import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.PayloadSerializer;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A {@link MessageBroker} that hands each record to a handler in this process instead of a broker: the outbox as a
 * reliable after-commit job queue. The handler is the one registered for the record's type header, or else for its
 * topic; the payload is decoded by the {@link PayloadSerializer} as the type the handler was registered with.
 *
 * <pre>{@code
 * HandlerMessageBroker handlers = HandlerMessageBroker.builder(serializer)
 *         .handler("orders", OrderPlaced.class, (order, record) -> mailer.confirm(order))
 *         .fallback("orders", OrderPlaced.class, (order, record, parked) -> support.alert(order, parked.reason()))
 *         .build();
 * Dispatcher dispatcher = Dispatcher.builder(store, handlers)
 *         .observer(handlers)              // the fallbacks: the dispatcher reports parked records to its observers
 *         .build();
 * }</pre>
 *
 * <p>What the dispatcher does for Kafka it does for handlers: a handler's exception is a retriable failure (retried
 * with backoff, holding only its own key, parked after {@code maxAttempts}) unless it is a
 * {@link PermanentFailureException} (parked at once); a record no handler takes is parked at once, its reason naming
 * the topic. Records of one key are handled one at a time, in order; only the leader's handlers run. <b>Handlers must
 * be idempotent</b>: delivery is at least once, and a crash or a change of leader repeats the records that were in
 * flight (see {@link MessageHandler}).
 *
 * <p>Handlers run on a bounded pool ({@link Builder#threads}, {@link Builder#queueCapacity}): a slow handler holds
 * its own thread and its own key while other keys run on the other threads. A run longer than
 * {@link Builder#handlerTimeout} fails (retriable) and its thread is interrupted; its key's next run waits until it
 * returns. Every send thus completes within the time it waits for a thread plus {@code handlerTimeout}, unless every
 * thread runs a handler that ignores interruption. When the queue is full a send fails as an outage (retried, never
 * counted towards attempts). Fallbacks ({@link FallbackHandler}) run on the same pool; register this broker as the
 * dispatcher's observer for them to be called.
 *
 * <p>Thread-safe. {@link #close(Duration)} waits for the runs under way, then fails what is left and interrupts its
 * threads; a handler that was interrupted may still have done its work, which its idempotence makes harmless.
 */
public final class HandlerMessageBroker implements MessageBroker, DispatcherObserver {
    private final String name;
    private final HandlerRoutes routes;
    private final HandlerExecutor executor;
    private final ParkedFallbacks fallbacks;
    private final Object lock = new Object();
    private boolean closed; // guarded by lock

    private HandlerMessageBroker(Builder b) {
        this.name = b.name;
        this.routes = new HandlerRoutes(b.serializer, b.typeHeader, b.handlersByTopic, b.handlersByType,
                b.fallbacksByTopic, b.fallbacksByType, b.defaultFallback);
        this.executor = new HandlerExecutor(b.name, b.threads, b.queueCapacity, b.handlerTimeout);
        this.fallbacks = new ParkedFallbacks(b.name, routes, executor);
    }

    /**
     * Starts a builder.
     *
     * @param serializer decodes the records' values for the handlers (the one their writers serialized them with)
     * @return a builder with the defaults listed on its setters
     * @throws NullPointerException if {@code serializer} is {@code null}
     */
    public static Builder builder(PayloadSerializer serializer) {
        return new Builder(serializer);
    }

    /**
     * Runs the record's handler on a handler thread.
     *
     * @param record the record to handle
     * @return a stage completing when the handler returned, or exceptionally with a {@link DeliveryException}:
     *         permanent if no handler takes the record, its value cannot be decoded, or the handler threw
     *         {@link PermanentFailureException}; retriable for any other failure and for a send after close
     */
    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        Objects.requireNonNull(record, "record");
        synchronized (lock) {
            if (closed) {
                return CompletableFuture.failedFuture(DeliveryException.retriable("the handlers of " + name
                        + " are closed", null));
            }
        }
        HandlerRoutes.Route<MessageHandler<Object>> route;
        try {
            route = routes.handler(record);
        } catch (DeliveryException e) {
            return CompletableFuture.failedFuture(e);
        }
        String what = "handler of " + route.name() + " on record " + record.id() + " (key "
                + dev.outbox.spi.Excerpt.of(record.key()) + ")";
        return executor.submit(record.key(), what,
                () -> route.target().handle(routes.decode(record, route.type()), record));
    }

    /**
     * Waits at most {@code timeout} until every handler run started so far returned.
     *
     * @param timeout the longest wait
     * @return whether they all returned in time
     */
    @Override
    public boolean flush(Duration timeout) {
        return executor.flush(timeout);
    }

    /**
     * Refuses new sends, waits at most {@code timeout} for the runs under way, then fails what is left, interrupts
     * the handler threads and stops them. Idempotent.
     *
     * @param timeout the longest wait for the runs under way
     */
    @Override
    public void close(Duration timeout) {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        executor.flush(timeout);
        executor.shutdown(Duration.ofSeconds(1));
    }

    /**
     * Remembers a failed record, for its fallback should it be parked: the fallback gets the record as this process
     * last tried it.
     *
     * @param record the record whose delivery failed
     * @param error  why it failed; not used here
     */
    @Override
    public void failed(OutboxRecord record, Throwable error) {
        fallbacks.failed(record);
    }

    /**
     * Calls the parked record's fallback, if one is registered (see {@link FallbackHandler}), on a handler thread:
     * the one of its type, else of its topic, else the default fallback.
     *
     * @param record the parked row, its park committed
     */
    @Override
    public void parked(ParkedRecord record) {
        fallbacks.parked(record);
    }

    /**
     * Forgets what {@link #failed} remembered of the record, if anything: it is being handed to its handler (again).
     *
     * @param record the record sent
     */
    @Override
    public void sent(OutboxRecord record) {
        fallbacks.forget(record);
    }

    /**
     * Forgets what {@link #failed} remembered of the record, if anything: its handler returned and its row was purged,
     * so it will not be parked.
     *
     * @param record      the record whose handler returned
     * @param sendToAck   from the hand-over to the handler to its return; not used here
     * @param commitToAck from the row's creation time to the acknowledgement; not used here
     */
    @Override
    public void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
        fallbacks.forget(record);
    }

    /**
     * Follows the dispatcher's status: what {@link #failed} remembered is dropped whenever this instance is not the
     * leader (the records are another leader's now).
     *
     * @param status the dispatcher's new status
     */
    @Override
    public void statusChanged(DispatcherHealth.Status status) {
        fallbacks.statusChanged(status);
    }

    /**
     * Describes the broker for logs.
     *
     * @return its name and the topics and types it has handlers for
     */
    @Override
    public String toString() {
        return "HandlerMessageBroker{" + name + ": " + routes + '}';
    }

    /** Builds a {@link HandlerMessageBroker}; not thread-safe. */
    public static final class Builder {
        private final PayloadSerializer serializer;
        private final Map<String, HandlerRoutes.Route<MessageHandler<Object>>> handlersByTopic = new LinkedHashMap<>();
        private final Map<String, HandlerRoutes.Route<MessageHandler<Object>>> handlersByType = new LinkedHashMap<>();
        private final Map<String, HandlerRoutes.Route<FallbackHandler<Object>>> fallbacksByTopic = new LinkedHashMap<>();
        private final Map<String, HandlerRoutes.Route<FallbackHandler<Object>>> fallbacksByType = new LinkedHashMap<>();
        private FallbackHandler<Object> defaultFallback;
        private String typeHeader = "type";
        private String name = "outbox";
        private int threads = 8;
        private int queueCapacity = 10_000;
        private Duration handlerTimeout = Duration.ofSeconds(30);

        private Builder(PayloadSerializer serializer) {
            this.serializer = Objects.requireNonNull(serializer, "serializer must not be null");
        }

        /**
         * Handles the records of {@code topic} (those whose type header names no type with a handler of its own).
         *
         * @param topic   the records' topic
         * @param type    what their values are decoded as ({@code byte[]}: the value as it is)
         * @param handler the handler
         * @param <T>     the payload's type
         * @return this builder
         * @throws IllegalArgumentException if {@code topic} is {@code null}, blank or already has a handler, naming it
         * @throws NullPointerException     if {@code type} or {@code handler} is {@code null}
         */
        public <T> Builder handler(String topic, Class<T> type, MessageHandler<? super T> handler) {
            put(handlersByTopic, "topic", topic, type, handler);
            return this;
        }

        /**
         * Handles the records whose type header ({@link #typeHeader}) is {@code typeName}, whatever their topic.
         *
         * @param typeName the header's value
         * @param type     what their values are decoded as
         * @param handler  the handler
         * @param <T>      the payload's type
         * @return this builder
         * @throws IllegalArgumentException if {@code typeName} is {@code null}, blank or already has a handler,
         *                                  naming it
         * @throws NullPointerException     if {@code type} or {@code handler} is {@code null}
         */
        public <T> Builder typeHandler(String typeName, Class<T> type, MessageHandler<? super T> handler) {
            put(handlersByType, "type", typeName, type, handler);
            return this;
        }

        /**
         * Called when a record of {@code topic} is parked.
         *
         * @param topic    the records' topic
         * @param type     what their values are decoded as
         * @param fallback the fallback
         * @param <T>      the payload's type
         * @return this builder
         * @throws IllegalArgumentException if {@code topic} is {@code null}, blank or already has a fallback, naming it
         * @throws NullPointerException     if {@code type} or {@code fallback} is {@code null}
         */
        public <T> Builder fallback(String topic, Class<T> type, FallbackHandler<? super T> fallback) {
            put(fallbacksByTopic, "topic", topic, type, fallback);
            return this;
        }

        /**
         * Called when a record whose type header is {@code typeName} is parked.
         *
         * @param typeName the header's value
         * @param type     what their values are decoded as
         * @param fallback the fallback
         * @param <T>      the payload's type
         * @return this builder
         * @throws IllegalArgumentException if {@code typeName} is {@code null}, blank or already has a fallback,
         *                                  naming it
         * @throws NullPointerException     if {@code type} or {@code fallback} is {@code null}
         */
        public <T> Builder typeFallback(String typeName, Class<T> type, FallbackHandler<? super T> fallback) {
            put(fallbacksByType, "type", typeName, type, fallback);
            return this;
        }

        /**
         * Called when a record without a fallback of its own is parked; its payload is decoded as its handler's type
         * (as {@code byte[]} when it has no handler).
         *
         * @param fallback the fallback
         * @return this builder
         * @throws NullPointerException if {@code fallback} is {@code null}
         */
        public Builder defaultFallback(FallbackHandler<Object> fallback) {
            this.defaultFallback = Objects.requireNonNull(fallback, "fallback must not be null");
            return this;
        }

        /**
         * The header whose value routes a record to a {@link #typeHandler}; {@code type} by default.
         *
         * @param header the header's name, not blank
         * @return this builder
         * @throws IllegalArgumentException if {@code header} is {@code null} or blank
         */
        public Builder typeHeader(String header) {
            this.typeHeader = notBlank("typeHeader", header);
            return this;
        }

        /**
         * Names the handler threads ({@code <name>-handler-1}, …) and log lines; {@code outbox} by default.
         *
         * @param name the name, not blank
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is {@code null} or blank
         */
        public Builder name(String name) {
            this.name = notBlank("name", name);
            return this;
        }

        /**
         * Handlers running at once, at most one per key; 8 by default.
         *
         * @param threads 1 to 1024
         * @return this builder
         * @throws IllegalArgumentException if {@code threads} is outside that range
         */
        public Builder threads(int threads) {
            if (threads < 1 || threads > 1024) {
                throw new IllegalArgumentException("threads must be 1 to 1024, was " + threads);
            }
            this.threads = threads;
            return this;
        }

        /**
         * Records waiting for a free handler thread; a send finding the queue full fails as an outage. 10,000 by
         * default (ten times the dispatcher's default {@code maxInFlightRecords}, which bounds it in practice).
         *
         * @param capacity at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code capacity} is less than 1
         */
        public Builder queueCapacity(int capacity) {
            if (capacity < 1) {
                throw new IllegalArgumentException("queueCapacity must be at least 1, was " + capacity);
            }
            this.queueCapacity = capacity;
            return this;
        }

        /**
         * Longest run of one handler: a run still under way after it fails (retriable) and its thread is
         * interrupted. 30 s by default.
         *
         * @param timeout positive
         * @return this builder
         * @throws IllegalArgumentException if {@code timeout} is {@code null}, zero or negative
         */
        public Builder handlerTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("handlerTimeout must be positive, was " + timeout);
            }
            this.handlerTimeout = timeout;
            return this;
        }

        /**
         * Builds the broker, whose threads start at once.
         *
         * @return the broker
         * @throws IllegalArgumentException if no handler is registered
         */
        public HandlerMessageBroker build() {
            if (handlersByTopic.isEmpty() && handlersByType.isEmpty()) {
                throw new IllegalArgumentException("no handler registered: add one with handler(topic, type, handler)"
                        + " or typeHandler(typeName, type, handler)");
            }
            return new HandlerMessageBroker(this);
        }

        @SuppressWarnings("unchecked")
        private static <H> void put(Map<String, HandlerRoutes.Route<H>> routes, String kind, String name,
                                    Class<?> type, Object target) {
            notBlank(kind, name);
            Objects.requireNonNull(type, "the payload type of " + kind + " '" + name + "' must not be null");
            Objects.requireNonNull(target, "the handler of " + kind + " '" + name + "' must not be null");
            if (routes.containsKey(name)) {
                throw new IllegalArgumentException(kind + " '" + name + "' has a "
                        + (target instanceof FallbackHandler<?> ? "fallback" : "handler") + " already: "
                        + routes.get(name).target());
            }
            routes.put(name, new HandlerRoutes.Route<>(kind + " '" + name + "'", type, (H) target));
        }

        private static String notBlank(String what, String value) {
            if (value == null || value.isBlank()) {
                throw new IllegalArgumentException(what + " must not be blank: '" + value + "'");
            }
            return value;
        }
    }
}
