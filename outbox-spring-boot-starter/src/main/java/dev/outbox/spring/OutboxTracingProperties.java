package dev.outbox.spring;

/**
 * Tracing of the outbox's messages with OpenTelemetry: the starter's {@code outbox.tracing.*} properties, used when
 * {@code outbox-opentelemetry} is on the class path and the application has an {@code OpenTelemetry} bean.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxTracingProperties {
    /**
     * Whether every message carries the writer's trace context in its headers (a TracingMessageDecorator bean),
     * when outbox-opentelemetry is on the class path and the application has an OpenTelemetry bean.
     */
    private boolean enabled = true;
    /**
     * Whether each message also gets a PRODUCER span ("create <topic>"), a child of the writer's span, whose context
     * the headers then carry.
     */
    private boolean producerSpans = false;

    /**
     * {@return whether the messages carry the writer's trace context; {@code true} by default} Bound from the
     * {@code outbox.tracing.enabled} property.
     */
    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Sets the {@code outbox.tracing.enabled} property.
     *
     * @param enabled {@code false} to leave the messages' headers without trace context
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /**
     * {@return whether each message gets a PRODUCER span; {@code false} by default} Bound from the
     * {@code outbox.tracing.producer-spans} property.
     */
    public boolean isProducerSpans() {
        return producerSpans;
    }

    /**
     * Sets the {@code outbox.tracing.producer-spans} property.
     *
     * @param producerSpans {@code true} to start a PRODUCER span per message and propagate its context
     */
    public void setProducerSpans(boolean producerSpans) {
        this.producerSpans = producerSpans;
    }
}
