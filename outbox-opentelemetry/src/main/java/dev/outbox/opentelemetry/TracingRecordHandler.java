package dev.outbox.opentelemetry;

import dev.outbox.broker.kafka.KafkaInboxConsumer;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * Continues the writer's trace on the consuming side of a {@link KafkaInboxConsumer}: wraps the consumer's
 * {@link KafkaInboxConsumer.RecordHandler} so that each record's handler runs inside a span of kind CONSUMER, named
 * {@code "process <topic>"}, whose parent is the context {@link TracingMessageDecorator} put into the record's
 * headers (through the same propagators: with the usual W3C setup, {@code traceparent}, {@code tracestate} and
 * {@code baggage}). The span is current while the handler runs, so the handler's own spans and logs join the trace;
 * it carries the messaging semantic conventions ({@code messaging.system = kafka},
 * {@code messaging.destination.name}, {@code messaging.operation.type = process},
 * {@code messaging.kafka.destination.partition}, {@code messaging.kafka.message.offset},
 * {@code messaging.message.id} = the inbox's message id) and ends when the handler returns or throws (then with
 * status ERROR and the exception recorded). A record without trace headers starts a new trace.
 *
 * <pre>{@code
 * KafkaInboxConsumer consumer = KafkaInboxConsumer.builder()
 *         ...
 *         .handler(TracingRecordHandler.wrap(openTelemetry, (connection, record, messageId) -> apply(record)))
 *         .build();
 * }</pre>
 *
 * <p>Needs {@code outbox-broker-kafka} on the class path (an optional dependency of this module). Immutable and
 * thread-safe; runs on the consumer's thread.
 */
public final class TracingRecordHandler implements KafkaInboxConsumer.RecordHandler {
    static final AttributeKey<Long> PARTITION = AttributeKey.longKey("messaging.kafka.destination.partition");
    static final AttributeKey<Long> OFFSET = AttributeKey.longKey("messaging.kafka.message.offset");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    static final AttributeKey<String> CONSUMER_GROUP = AttributeKey.stringKey("messaging.consumer.group.name");

    /** Reads a propagation field from the record's last header of that name, as UTF-8. */
    private static final TextMapGetter<Headers> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Headers carrier) {
            List<String> keys = new ArrayList<>();
            for (Header h : carrier) {
                keys.add(h.key());
            }
            return keys;
        }

        @Override
        public String get(Headers carrier, String key) {
            if (carrier == null) {
                return null;
            }
            Header h = carrier.lastHeader(key);
            return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
        }
    };

    private final KafkaInboxConsumer.RecordHandler delegate;
    private final TextMapPropagator propagator;
    private final Tracer tracer;
    private final String consumerGroup;

    private TracingRecordHandler(OpenTelemetry openTelemetry, String consumerGroup,
                                 KafkaInboxConsumer.RecordHandler delegate) {
        Objects.requireNonNull(openTelemetry, "openTelemetry must not be null");
        this.delegate = Objects.requireNonNull(delegate, "handler must not be null");
        this.propagator = openTelemetry.getPropagators().getTextMapPropagator();
        this.tracer = openTelemetry.getTracer(TracingMessageDecorator.INSTRUMENTATION_NAME);
        this.consumerGroup = consumerGroup;
    }

    /**
     * Wraps {@code handler} so that it runs in a CONSUMER span continuing the record's trace.
     *
     * @param openTelemetry the OpenTelemetry instance whose propagators read the headers and whose tracer (scope
     *                      {@value TracingMessageDecorator#INSTRUMENTATION_NAME}) starts the spans; not {@code null}.
     *                      Both are read once, here.
     * @param handler       the record's effect; not {@code null}
     * @return the wrapping handler, to give to {@link KafkaInboxConsumer.Builder#handler}
     * @throws NullPointerException if an argument is {@code null}
     */
    public static TracingRecordHandler wrap(OpenTelemetry openTelemetry, KafkaInboxConsumer.RecordHandler handler) {
        return new TracingRecordHandler(openTelemetry, null, handler);
    }

    /**
     * As {@link #wrap(OpenTelemetry, KafkaInboxConsumer.RecordHandler)}, the spans also naming the consumer group
     * ({@code messaging.consumer.group.name}).
     *
     * @param openTelemetry the OpenTelemetry instance; not {@code null}
     * @param consumerGroup the consumer's group id, as given to {@link KafkaInboxConsumer.Builder#groupId}; not blank
     * @param handler       the record's effect; not {@code null}
     * @return the wrapping handler
     * @throws NullPointerException     if an argument is {@code null}
     * @throws IllegalArgumentException if {@code consumerGroup} is blank
     */
    public static TracingRecordHandler wrap(OpenTelemetry openTelemetry, String consumerGroup,
                                            KafkaInboxConsumer.RecordHandler handler) {
        if (Objects.requireNonNull(consumerGroup, "consumerGroup must not be null").isBlank()) {
            throw new IllegalArgumentException("consumerGroup must not be blank");
        }
        return new TracingRecordHandler(openTelemetry, consumerGroup, handler);
    }

    @Override
    public void handle(Connection connection, ConsumerRecord<String, byte[]> record, UUID messageId)
            throws Exception {
        Context parent = propagator.extract(Context.root(), record.headers(), GETTER);
        var builder = tracer.spanBuilder("process " + record.topic())
                .setSpanKind(SpanKind.CONSUMER)
                .setParent(parent)
                .setAttribute(TracingMessageDecorator.MESSAGING_SYSTEM, "kafka")
                .setAttribute(TracingMessageDecorator.DESTINATION, record.topic())
                .setAttribute(TracingMessageDecorator.OPERATION_TYPE, "process")
                .setAttribute(TracingMessageDecorator.OPERATION_NAME, "process")
                .setAttribute(PARTITION, (long) record.partition())
                .setAttribute(OFFSET, record.offset())
                .setAttribute(MESSAGE_ID, messageId.toString());
        if (consumerGroup != null) {
            builder.setAttribute(CONSUMER_GROUP, consumerGroup);
        }
        Span span = builder.startSpan();
        try (Scope ignored = parent.with(span).makeCurrent()) {
            delegate.handle(connection, record, messageId);
        } catch (Exception | Error e) {
            span.recordException(e);
            span.setStatus(StatusCode.ERROR);
            throw e;
        } finally {
            span.end();
        }
    }

    @Override
    public String toString() {
        return "TracingRecordHandler{" + delegate + '}';
    }
}
