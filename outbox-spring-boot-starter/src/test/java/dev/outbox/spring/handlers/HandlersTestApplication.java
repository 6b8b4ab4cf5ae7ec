package dev.outbox.spring.handlers;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An application whose outbox records go to its own {@code @OutboxHandler} methods ({@code outbox.broker=handlers}),
 * not to Kafka: Kafka only elects the leader.
 */
@SpringBootApplication
public class HandlersTestApplication {

    /** An event of the first type, routed by its topic. */
    public record OrderPlaced(String customer, int order) {
    }

    /** An event of the second type, routed by its type header. */
    public record PaymentFailed(String customer, int payment) {
    }
}
