package dev.outbox.examples.spring;

import dev.outbox.ParkedRecord;
import dev.outbox.spring.OutboxFallbackHandler;
import dev.outbox.spring.OutboxHandler;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The guide's Spring handlers snippet (docs/handlers.md): an application with {@code outbox.broker=handlers} sends
 * its order confirmations after commit through these methods. Compiled by the examples' build.
 */
class OrderMails {
    final List<OrderPlaced> sent = new CopyOnWriteArrayList<>();
    final List<String> tickets = new CopyOnWriteArrayList<>();

    // tag::handler[]
    @OutboxHandler(topic = "order-events")          // the payload's type is the parameter's
    void confirm(OrderPlaced order) {
        sent.add(order);                            // e.g. mailer.sendConfirmation(order): must be idempotent
    }

    @OutboxFallbackHandler(topic = "order-events")  // once the record is parked
    void confirmationFailed(OrderPlaced order, ParkedRecord parked) {
        tickets.add("no confirmation for order " + order.orderId() + ": " + parked.reason());
    }
    // end::handler[]
}
