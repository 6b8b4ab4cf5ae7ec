package dev.outbox.examples;

import dev.outbox.broker.kafka.KafkaMessageBroker;

/**
 * The Kafka page's exactly-once snippet, in compiled code that {@code ExactlyOnceSnippetsTest} runs; the region
 * between {@code tag::} and {@code end::} is what the page shows (checked by {@code ReadmeSnippetsTest}).
 */
final class ExactlyOnceSnippets {

    private ExactlyOnceSnippets() {
    }

    static KafkaMessageBroker broker(String bootstrapServers) {
        // tag::broker[]
        KafkaMessageBroker broker = KafkaMessageBroker.builder()
                .bootstrapServers(bootstrapServers)
                .transactionalId("orders-outbox")   // required: one id per outbox, the same on every instance
                .exactlyOnce()                      // progress in the compacted topic "outbox-progress"
                .build();
        // end::broker[]
        return broker;
    }
}
