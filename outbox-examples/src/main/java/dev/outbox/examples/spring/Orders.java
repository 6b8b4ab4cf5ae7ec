package dev.outbox.examples.spring;

import dev.outbox.spring.OutboxPublisher;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

import java.math.BigDecimal;

/** Places orders: the order row and its event commit together, or neither does. Thread-safe. */
@Service
public class Orders {
    private final JdbcClient jdbc;
    private final OutboxPublisher outbox;

    public Orders(JdbcClient jdbc, OutboxPublisher outbox) {
        this.jdbc = jdbc;
        this.outbox = outbox;
    }

    // tag::place[]
    @Transactional
    public long place(String customer, BigDecimal total) {
        long id = jdbc.sql("INSERT INTO orders (customer, total) VALUES (?, ?) RETURNING id")
                .params(customer, total).query(Long.class).single();
        outbox.publish("order-events", customer, new OrderPlaced(id, customer, total));   // JSON, key = customer
        return id;   // the order and its event commit together; an exception rolls back both
    }
    // end::place[]
}
