package dev.outbox.examples;

import org.springframework.context.ApplicationEventPublisher;
import org.springframework.modulith.events.Externalized;
import org.springframework.transaction.annotation.Transactional;

/** The guide's Spring Modulith snippet (docs/spring-modulith.md), compiled by the examples' build. */
final class ModulithSnippets {
    private ModulithSnippets() {
    }

    // tag::externalized[]
    @Externalized("order-events::#{customer()}")     // topic :: key (a SpEL expression on the event)
    record OrderPlaced(long orderId, String customer) {
    }

    static class Orders {
        private final ApplicationEventPublisher events;

        Orders(ApplicationEventPublisher events) {
            this.events = events;
        }

        @Transactional
        public void place(long orderId, String customer) {
            // ... write the order ...
            events.publishEvent(new OrderPlaced(orderId, customer));  // into the outbox, in this transaction
        }
    }
    // end::externalized[]
}
