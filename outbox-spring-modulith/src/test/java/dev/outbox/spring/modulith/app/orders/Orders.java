package dev.outbox.spring.modulith.app.orders;

import org.springframework.context.ApplicationEventPublisher;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Places orders: the order row and its event commit together, or neither does. */
@Service
public class Orders {
    private final JdbcClient jdbc;
    private final ApplicationEventPublisher events;

    Orders(JdbcClient jdbc, ApplicationEventPublisher events) {
        this.jdbc = jdbc;
        this.events = events;
    }

    /**
     * Places order {@code order} of {@code customer}.
     *
     * @param fail whether to throw after publishing, rolling back the order and its event
     */
    @Transactional
    public void place(String customer, long order, boolean fail) {
        jdbc.sql("INSERT INTO orders (id, customer) VALUES (?, ?)").params(order, customer).update();
        events.publishEvent(new OrderPlaced(customer, order));
        if (fail) {
            throw new IllegalStateException("payment declined for order " + order);
        }
    }
}
