package dev.outbox.spring.app;

/** The event the orders services publish, as JSON. */
public record OrderPlaced(long orderId, String customer) {
}
