package dev.outbox.examples.spring;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The orders service as a Spring Boot application: {@code POST /orders} writes an order and its
 * {@link OrderPlaced} event in one transaction ({@link Orders}); the outbox starter publishes the event to Kafka.
 * Its whole configuration is {@code application.yml}, shown in the README's "Spring Boot" section.
 */
@SpringBootApplication
public class OrdersApplication {

    public static void main(String[] args) {
        SpringApplication.run(OrdersApplication.class, args);
    }
}
