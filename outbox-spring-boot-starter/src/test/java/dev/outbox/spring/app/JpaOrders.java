package dev.outbox.spring.app;

import dev.outbox.spring.OutboxPublisher;
import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import org.springframework.transaction.annotation.Transactional;

/** Writes an order with JPA (Hibernate) and its event with the outbox, in one transaction; imported by the JPA test. */
public class JpaOrders {
    @PersistenceContext
    private EntityManager entityManager;
    private final OutboxPublisher outbox;

    public JpaOrders(OutboxPublisher outbox) {
        this.outbox = outbox;
    }

    @Transactional
    public void place(long orderId, String customer, boolean failAfterPublishing) {
        entityManager.persist(new OrderEntity(orderId, customer));
        entityManager.flush();
        outbox.publish("orders", customer, new OrderPlaced(orderId, customer));
        if (failAfterPublishing) {
            throw new IllegalStateException("order " + orderId + " failed after publishing");
        }
    }

    @Transactional(readOnly = true)
    public long count() {
        return entityManager.createQuery("SELECT count(o) FROM OrderEntity o", Long.class).getSingleResult();
    }
}
