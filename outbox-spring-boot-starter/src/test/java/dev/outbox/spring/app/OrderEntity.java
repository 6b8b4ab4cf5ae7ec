package dev.outbox.spring.app;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** An order as a JPA entity. */
@Entity
@Table(name = "jpa_orders")
public class OrderEntity {
    @Id
    private Long id;
    private String customer;

    protected OrderEntity() {
    }

    public OrderEntity(long id, String customer) {
        this.id = id;
        this.customer = customer;
    }

    public Long getId() {
        return id;
    }

    public String getCustomer() {
        return customer;
    }
}
