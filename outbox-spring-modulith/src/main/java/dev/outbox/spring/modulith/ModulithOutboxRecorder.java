package dev.outbox.spring.modulith;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.PayloadSerializer;
import dev.outbox.spring.OutboxPublisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationListener;
import org.springframework.context.PayloadApplicationEvent;
import org.springframework.expression.EvaluationContext;
import org.springframework.modulith.events.EventExternalizationConfiguration;
import org.springframework.modulith.events.RoutingTarget;
import org.springframework.modulith.events.support.BrokerRouting;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Writes each event Spring Modulith externalizes into the outbox, synchronously, on the publishing thread and so in
 * the publishing transaction (through {@link OutboxPublisher}): the event commits or rolls back with the business
 * change that published it. What is written:
 * <ul>
 *   <li>topic: the routing target ({@code @Externalized("orders::#{customer()}")} → {@code orders}), expressions
 *       evaluated on the mapped event as Modulith's own transports do;</li>
 *   <li>key: the routing key ({@code #{customer()}} → the customer), or the topic when the event has none (its
 *       events are then ordered as one key);</li>
 *   <li>value: the mapped event ({@link EventExternalizationConfiguration#map}) serialized by the application's
 *       {@link PayloadSerializer}, with its {@code content-type} header;</li>
 *   <li>headers: those of {@link EventExternalizationConfiguration#getHeadersFor}, as strings.</li>
 * </ul>
 * An event published outside a transaction is refused, as {@link OutboxPublisher#publish} refuses it (unless
 * {@code outbox.publisher.require-transaction=false}): the exception reaches the publisher. Thread-safe.
 */
public final class ModulithOutboxRecorder implements ApplicationListener<PayloadApplicationEvent<?>> {
    private static final Logger log = LoggerFactory.getLogger(ModulithOutboxRecorder.class);

    private final EventExternalizationConfiguration configuration;
    private final OutboxPublisher outbox;
    private final PayloadSerializer serializer;
    private final EvaluationContext context;

    /**
     * Creates a recorder. {@link OutboxModulithAutoConfiguration} registers one when Modulith's externalization mode
     * is {@code outbox}; it listens to every event the application publishes.
     *
     * @param configuration which events are externalized, and how they are routed and mapped
     * @param outbox        writes into the outbox in the current transaction
     * @param serializer    turns a mapped event into the message's value
     * @param context       where routing expressions are evaluated (with the application's beans)
     * @throws NullPointerException if any argument is {@code null}
     */
    public ModulithOutboxRecorder(EventExternalizationConfiguration configuration, OutboxPublisher outbox,
                                  PayloadSerializer serializer, EvaluationContext context) {
        this.configuration = Objects.requireNonNull(configuration, "configuration");
        this.outbox = Objects.requireNonNull(outbox, "outbox");
        this.serializer = Objects.requireNonNull(serializer, "serializer");
        this.context = Objects.requireNonNull(context, "context");
    }

    /**
     * Writes the event's payload into the outbox, in the current transaction, if Modulith externalizes it (see
     * {@link EventExternalizationConfiguration#supports}); ignores any other event.
     *
     * @param event an event the application published
     * @throws IllegalArgumentException if the routing target is not a valid topic, naming it and the event's type
     * @throws org.springframework.transaction.IllegalTransactionStateException if no transaction is active on the
     *         outbox's DataSource while {@code outbox.publisher.require-transaction} is on
     * @throws dev.outbox.OutboxException if the mapped event cannot be serialized or the database rejects the write
     */
    @Override
    public void onApplicationEvent(PayloadApplicationEvent<?> event) {
        Object payload = event.getPayload();
        if (!configuration.supports(payload)) {
            return;
        }
        outbox.publish(message(payload));
    }

    /**
     * The outbox message of an externalized event.
     *
     * @param event the event as published
     * @return its message
     * @throws IllegalArgumentException if the routing target is not a valid topic, naming it and the event's type
     */
    OutboxMessage message(Object event) {
        RoutingTarget target = configuration.determineTarget(event);
        Object mapped = configuration.map(event);
        BrokerRouting routing = BrokerRouting.of(target, context);
        String topic = routing.getTarget(mapped);
        String key = routing.getKey(mapped);
        if (key == null) {
            key = topic;
        }
        List<Header> headers = new ArrayList<>();
        if (mapped != null) {
            headers.add(Header.of(PayloadSerializer.CONTENT_TYPE_HEADER, serializer.contentType()));
        }
        for (Map.Entry<String, Object> h : configuration.getHeadersFor(event).entrySet()) {
            headers.add(Header.of(h.getKey(), h.getValue() == null ? null : h.getValue().toString()));
        }
        try {
            OutboxMessage m = OutboxMessage.of(topic, key, mapped == null ? null : serializer.serialize(mapped),
                    headers);
            log.debug("Writing a {} to the outbox, topic {}", event.getClass().getName(), topic);
            return m;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the externalized " + event.getClass().getName() + " routes to '"
                    + target + "', which is not a valid outbox message: " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "ModulithOutboxRecorder{" + outbox + '}';
    }
}
