package dev.outbox.examples.spring;

import java.math.BigDecimal;

/** The event published for every order placed, as JSON (the application's own Jackson settings apply). */
public record OrderPlaced(long orderId, String customer, BigDecimal total) {
}
