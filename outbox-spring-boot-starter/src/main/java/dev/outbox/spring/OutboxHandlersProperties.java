package dev.outbox.spring;

import java.time.Duration;

/**
 * The in-process handlers ({@code outbox.handlers.*}), used when {@code outbox.broker=handlers}: the pool the
 * application's {@link OutboxHandler} and {@link OutboxFallbackHandler} methods run on, and how records are routed
 * to them. See {@link dev.outbox.handlers.HandlerMessageBroker.Builder} for each setting. The handler threads are
 * named after {@code outbox.dispatcher.name} ({@code <name>-handler-1}, ...).
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxHandlersProperties {
    /** Handlers running at once (at most one per key). */
    private int threads = 8;
    /** Records waiting for a free handler thread; a send finding the queue full is retried as an outage. */
    private int queueCapacity = 10_000;
    /** Longest run of one handler: a run still under way after it fails (retriable) and is interrupted. */
    private Duration timeout = Duration.ofSeconds(30);
    /** The header whose value routes a record to an {@code @OutboxHandler(type = ...)} method. */
    private String typeHeader = "type";

    /**
     * {@return how many handlers run at once, at most one per key; 8 by default} Bound from the
     * {@code outbox.handlers.threads} property.
     */
    public int getThreads() {
        return threads;
    }

    /**
     * Sets the {@code outbox.handlers.threads} property.
     *
     * @param threads 1 to 1024; checked at start-up
     */
    public void setThreads(int threads) {
        this.threads = threads;
    }

    /**
     * {@return how many records may wait for a free handler thread; 10,000 by default} A send finding the queue full
     * fails as an outage: retried, not counted towards {@code outbox.dispatcher.max-attempts}. Bound from the
     * {@code outbox.handlers.queue-capacity} property.
     */
    public int getQueueCapacity() {
        return queueCapacity;
    }

    /**
     * Sets the {@code outbox.handlers.queue-capacity} property.
     *
     * @param queueCapacity at least 1; checked at start-up. The dispatcher's {@code max-in-flight-records} bounds the
     *                      queue in practice.
     */
    public void setQueueCapacity(int queueCapacity) {
        this.queueCapacity = queueCapacity;
    }

    /**
     * {@return the longest run of one handler, 30 seconds by default: a run still under way after it fails (retriable)
     * and its thread is interrupted} With leader election, it also takes the place of
     * {@code outbox.kafka.delivery-timeout} as the longest a send may take to settle. Bound from the
     * {@code outbox.handlers.timeout} property.
     */
    public Duration getTimeout() {
        return timeout;
    }

    /**
     * Sets the {@code outbox.handlers.timeout} property.
     *
     * @param timeout a positive duration (millisecond precision); checked at start-up
     */
    public void setTimeout(Duration timeout) {
        this.timeout = timeout;
    }

    /**
     * {@return the header whose value routes a record to an {@code @OutboxHandler(type = ...)} method, and once
     * parked to an {@code @OutboxFallbackHandler(type = ...)} method, in preference to its topic's; {@code type} by
     * default} Bound from the {@code outbox.handlers.type-header} property.
     */
    public String getTypeHeader() {
        return typeHeader;
    }

    /**
     * Sets the {@code outbox.handlers.type-header} property.
     *
     * @param typeHeader a header name, not blank; checked at start-up
     */
    public void setTypeHeader(String typeHeader) {
        this.typeHeader = typeHeader;
    }
}
