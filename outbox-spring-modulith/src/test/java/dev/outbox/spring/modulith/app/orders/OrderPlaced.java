package dev.outbox.spring.modulith.app.orders;

import org.springframework.modulith.events.Externalized;

/**
 * Published when an order is placed; externalized to the topic {@code modulith-orders}, keyed by customer.
 *
 * @param customer who ordered: the routing key
 * @param order    the order's number, rising per customer
 */
@Externalized("modulith-orders::#{customer()}")
public record OrderPlaced(String customer, long order) {
}
