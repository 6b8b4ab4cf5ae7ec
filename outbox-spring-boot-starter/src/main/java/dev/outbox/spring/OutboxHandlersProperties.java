package dev.outbox.spring;

import java.time.Duration;

/**
 * The in-process handlers ({@code outbox.handlers.*}), used when {@code outbox.broker=handlers}: the pool the
 * application's {@code @OutboxHandler} methods run on. See {@code HandlerMessageBroker.Builder} for each setting.
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

    public int getThreads() {
        return threads;
    }

    public void setThreads(int threads) {
        this.threads = threads;
    }

    public int getQueueCapacity() {
        return queueCapacity;
    }

    public void setQueueCapacity(int queueCapacity) {
        this.queueCapacity = queueCapacity;
    }

    public Duration getTimeout() {
        return timeout;
    }

    public void setTimeout(Duration timeout) {
        this.timeout = timeout;
    }

    public String getTypeHeader() {
        return typeHeader;
    }

    public void setTypeHeader(String typeHeader) {
        this.typeHeader = typeHeader;
    }
}
