package dev.outbox.spring.app;

import dev.outbox.spring.OutboxPublisher;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Writes an order with JdbcTemplate and its event with the outbox, in one transaction. */
@Service
public class JdbcOrders {
    private final JdbcTemplate jdbc;
    private final OutboxPublisher outbox;

    public JdbcOrders(JdbcTemplate jdbc, OutboxPublisher outbox) {
        this.jdbc = jdbc;
        this.outbox = outbox;
    }

    @Transactional
    public void place(long orderId, String customer, boolean failAfterPublishing) {
        jdbc.update("INSERT INTO orders (id, customer) VALUES (?, ?)", orderId, customer);
        outbox.publish("orders", customer, new OrderPlaced(orderId, customer));
        if (failAfterPublishing) {
            throw new IllegalStateException("order " + orderId + " failed after publishing");
        }
    }
}
