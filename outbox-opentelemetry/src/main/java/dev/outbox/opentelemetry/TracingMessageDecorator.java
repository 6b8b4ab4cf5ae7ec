package dev.outbox.opentelemetry;

import dev.outbox.Header;
import dev.outbox.MessageDecorator;
import dev.outbox.OutboxMessage;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Carries the writer's trace context through the outbox: injects the current OpenTelemetry {@link Context} into
 * every message's headers, through the configured propagators (with the usual W3C setup: {@code traceparent},
 * {@code tracestate} and {@code baggage}), so that the consumer that extracts them from the published record
 * continues the writer's trace. Headers of the same names already on the message are replaced; others are kept
 * in order.
 *
 * <pre>{@code
 * PostgresStore store = PostgresStore.builder(dataSource)
 *         .decorator(TracingMessageDecorator.builder(openTelemetry).producerSpans(true).build())
 *         .build();
 * }</pre>
 *
 * <p>With {@linkplain Builder#producerSpans(boolean) producer spans} on, each message also gets a span of kind
 * PRODUCER, a child of the writer's current span, named {@code "create <topic>"} and carrying the messaging
 * semantic conventions ({@code messaging.system}, {@code messaging.destination.name},
 * {@code messaging.operation.type = create}, {@code messaging.operation.name = create}); the headers then carry
 * that span's context, so the consumer's span becomes its child. The span covers the creation of the message
 * inside the writer's transaction — the moment the message enters the messaging system — and ends at once: the
 * dispatcher publishes it later, from another thread or process.
 *
 * <p>A message written with no current span and no baggage is returned unchanged. Immutable and thread-safe;
 * runs on the writer's thread, as every {@link MessageDecorator}.
 */
public final class TracingMessageDecorator implements MessageDecorator {
    /** The instrumentation scope of the producer spans. */
    public static final String INSTRUMENTATION_NAME = "dev.outbox.opentelemetry";

    static final AttributeKey<String> MESSAGING_SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
    static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("messaging.operation.name");

    private static final TextMapSetter<Map<String, String>> SETTER = (carrier, key, value) -> {
        if (carrier != null) {
            carrier.put(key, value);
        }
    };

    private final TextMapPropagator propagator;
    private final Tracer tracer;
    private final boolean producerSpans;
    private final String messagingSystem;
    private final Set<String> fields;

    private TracingMessageDecorator(Builder b) {
        this.propagator = b.openTelemetry.getPropagators().getTextMapPropagator();
        this.tracer = b.openTelemetry.getTracer(INSTRUMENTATION_NAME);
        this.producerSpans = b.producerSpans;
        this.messagingSystem = b.messagingSystem;
        Collection<String> f = propagator.fields();
        this.fields = Set.copyOf(new HashSet<>(f));
    }

    /**
     * A decorator injecting the context through {@code openTelemetry}'s propagators, without producer spans.
     *
     * @param openTelemetry the OpenTelemetry instance whose text-map propagator writes the headers (for example
     *                      {@code GlobalOpenTelemetry.get()}); not {@code null}. Its propagator is read once, here.
     * @return a new decorator, never {@code null}
     * @throws NullPointerException if {@code openTelemetry} is {@code null}
     */
    public static TracingMessageDecorator of(OpenTelemetry openTelemetry) {
        return builder(openTelemetry).build();
    }

    /**
     * Starts a builder over {@code openTelemetry} (its propagators, and its tracer for producer spans).
     *
     * @param openTelemetry the OpenTelemetry instance whose text-map propagator writes the headers and whose tracer
     *                      (scope {@value #INSTRUMENTATION_NAME}) starts the producer spans; not {@code null}. Both
     *                      are read when {@link Builder#build()} runs.
     * @return a new builder with producer spans off and {@code messaging.system} "kafka"
     * @throws NullPointerException if {@code openTelemetry} is {@code null}
     */
    public static Builder builder(OpenTelemetry openTelemetry) {
        return new Builder(openTelemetry);
    }

    @Override
    public OutboxMessage decorate(OutboxMessage message) {
        Context context = Context.current();
        Span producer = null;
        if (producerSpans) {
            producer = tracer.spanBuilder("create " + message.topic())
                    .setSpanKind(SpanKind.PRODUCER)
                    .setParent(context)
                    .setAttribute(MESSAGING_SYSTEM, messagingSystem)
                    .setAttribute(DESTINATION, message.topic())
                    .setAttribute(OPERATION_TYPE, "create")
                    .setAttribute(OPERATION_NAME, "create")
                    .startSpan();
            context = context.with(producer);
        }
        try {
            Map<String, String> carrier = new LinkedHashMap<>();
            propagator.inject(context, carrier, SETTER);
            if (carrier.isEmpty()) {
                return message;
            }
            List<Header> headers = new ArrayList<>(message.headers().size() + carrier.size());
            for (Header h : message.headers()) {
                if (!fields.contains(h.name()) && !carrier.containsKey(h.name())) {
                    headers.add(h);
                }
            }
            carrier.forEach((name, value) -> headers.add(Header.of(name, value)));
            return message.withHeaders(headers);
        } finally {
            if (producer != null) {
                producer.end();
            }
        }
    }

    @Override
    public String toString() {
        return "TracingMessageDecorator{producerSpans=" + producerSpans + ", messagingSystem=" + messagingSystem
                + ", fields=" + fields + '}';
    }

    /** Builds a {@link TracingMessageDecorator}; not thread-safe. */
    public static final class Builder {
        private final OpenTelemetry openTelemetry;
        private boolean producerSpans;
        private String messagingSystem = "kafka";

        private Builder(OpenTelemetry openTelemetry) {
            this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry must not be null");
        }

        /**
         * Whether to start a PRODUCER span per message (see the class documentation); off by default.
         *
         * @param on {@code true} to start and end a producer span around each message's creation and propagate
         *           its context; {@code false} to propagate the writer's current context as it is
         * @return this builder
         */
        public Builder producerSpans(boolean on) {
            this.producerSpans = on;
            return this;
        }

        /**
         * The {@code messaging.system} attribute of producer spans, naming the broker the dispatcher publishes to;
         * "kafka" by default.
         *
         * @param system the value of the attribute, for example "kafka" or "rabbitmq" (OpenTelemetry's
         *               well-known values are lower case); not {@code null} or blank
         * @return this builder
         * @throws IllegalArgumentException if {@code system} is {@code null} or blank
         */
        public Builder messagingSystem(String system) {
            if (system == null || system.isBlank()) {
                throw new IllegalArgumentException("messagingSystem must not be blank: '" + system + "'");
            }
            this.messagingSystem = system;
            return this;
        }

        /**
         * Builds the decorator, reading the propagator and the tracer from the OpenTelemetry instance now. The
         * builder may be reused; later changes do not affect decorators already built.
         *
         * @return a new immutable, thread-safe decorator
         */
        public TracingMessageDecorator build() {
            return new TracingMessageDecorator(this);
        }
    }
}
