package dev.outbox.examples.spring;

import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

import java.math.BigDecimal;
import java.util.Map;

/** {@code POST /orders {"customer": "...", "total": 12.50}} places an order and answers its id. */
@RestController
public class OrdersController {
    private final Orders orders;

    public OrdersController(Orders orders) {
        this.orders = orders;
    }

    /** The request body. */
    public record NewOrder(String customer, BigDecimal total) {
    }

    @PostMapping("/orders")
    @ResponseStatus(HttpStatus.CREATED)
    public Map<String, Long> place(@RequestBody NewOrder order) {
        if (order.customer() == null || order.customer().isBlank() || order.total() == null
                || order.total().signum() < 0) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "customer and a total >= 0 are required");
        }
        return Map.of("orderId", orders.place(order.customer(), order.total()));
    }
}
