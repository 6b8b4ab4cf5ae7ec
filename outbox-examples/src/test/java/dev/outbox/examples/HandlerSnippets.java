package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.handlers.HandlerMessageBroker;
import dev.outbox.handlers.PermanentFailureException;
import dev.outbox.jackson.JacksonPayloadSerializer;
import dev.outbox.spi.Store;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** The guide's in-process handlers snippet (docs/handlers.md), compiled and run by {@code HandlerSnippetsTest}. */
final class HandlerSnippets {
    /** An event of the order service. */
    record OrderPlaced(long orderId, String customer) {
    }

    final List<OrderPlaced> confirmed = new CopyOnWriteArrayList<>();
    final List<String> alerts = new CopyOnWriteArrayList<>();

    void confirm(OrderPlaced order) {
        if (order.customer().isEmpty()) {
            throw new PermanentFailureException("order " + order.orderId() + " has no customer to confirm to");
        }
        confirmed.add(order);
    }

    void alert(OrderPlaced order, String reason) {
        alerts.add(order.orderId() + ": " + reason);
    }

    Dispatcher dispatcher(Store store, DispatcherConfig config) {
        // tag::handlers[]
        HandlerMessageBroker handlers = HandlerMessageBroker.builder(JacksonPayloadSerializer.create())
                .handler("order-events", OrderPlaced.class, (order, record) -> confirm(order))
                .fallback("order-events", OrderPlaced.class, (order, record, parked) -> alert(order, parked.reason()))
                .build();
        Dispatcher dispatcher = Dispatcher.builder(store, handlers)
                .config(config)
                .observer(handlers)      // the dispatcher reports parked records to the fallbacks
                .build();
        dispatcher.start();              // the leader's handlers run; a standby's wait
        // end::handlers[]
        return dispatcher;
    }
}
