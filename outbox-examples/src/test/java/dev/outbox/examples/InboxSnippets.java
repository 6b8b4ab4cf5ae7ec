package dev.outbox.examples;

import dev.outbox.Inbox;
import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.broker.kafka.OnSequenceBreak;
import dev.outbox.broker.kafka.SequenceBreak;
import dev.outbox.store.postgres.PostgresInbox;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

/**
 * The README's "Consuming: the inbox" snippets, in compiled code that {@code InboxSnippetsTest} runs against real
 * servers; {@code ReadmeSnippetsTest} checks that the README's copies still match them.
 */
final class InboxSnippets {
    private InboxSnippets() {
    }

    static PostgresInbox createInbox(DataSource dataSource) {
        // tag::inbox[]
        PostgresInbox inbox = PostgresInbox.builder(dataSource)   // or MySqlInbox.builder(dataSource)
                .retention(Duration.ofDays(7))                   // how long processed ids are remembered
                .build();                                        // tables "inbox" and "inbox_failed"
        inbox.createSchema();                                    // idempotent; or inbox.schemaSql() in migrations
        // end::inbox[]
        return inbox;
    }

    static boolean process(DataSource dataSource, Inbox inbox, UUID messageId, long orderId) throws SQLException {
        // tag::process[]
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            boolean applied = inbox.process(c, "billing", messageId, tx -> {
                try (PreparedStatement s = tx.prepareStatement("INSERT INTO invoices (order_id) VALUES (?)")) {
                    s.setLong(1, orderId);
                    s.executeUpdate();
                }
            });
            c.commit();   // the invoice and the inbox entry commit together; a repeat of messageId changes nothing
            return applied;
        }
        // end::process[]
    }

    static KafkaInboxConsumer consumer(DataSource dataSource, Inbox inbox, String bootstrapServers) {
        // tag::consumer[]
        KafkaInboxConsumer consumer = KafkaInboxConsumer.builder()
                .bootstrapServers(bootstrapServers)
                .groupId("billing")                  // also the inbox's consumer name
                .topics("order-events")
                .dataSource(dataSource)              // the database of the inbox and of your effects
                .inbox(inbox)
                .handler((connection, record, messageId) -> {
                    try (PreparedStatement s = connection.prepareStatement(
                            "INSERT INTO invoices (order_id) VALUES (?)")) {
                        s.setLong(1, Long.parseLong(record.key()));
                        s.executeUpdate();          // committed by the consumer, with the inbox entry
                    }
                })
                .build();
        consumer.start();                            // ... and consumer.close() at shutdown
        // end::consumer[]
        return consumer;
    }

    static KafkaInboxConsumer holdingConsumer(DataSource dataSource, Inbox inbox, String bootstrapServers,
                                              List<SequenceBreak> alerts) {
        // tag::sequence[]
        KafkaInboxConsumer consumer = KafkaInboxConsumer.builder()
                .bootstrapServers(bootstrapServers)
                .groupId("shipping")
                .topics("order-events")
                .dataSource(dataSource)
                .inbox(inbox)
                .handler((connection, record, messageId) -> { /* the effect */ })
                .onSequenceBreak(OnSequenceBreak.HOLD)          // default REPORT: report and carry on
                .sequenceHoldTimeout(Duration.ofMinutes(10))    // then the held record is handled anyway
                .listener(new KafkaInboxConsumer.Listener() {
                    @Override
                    public void sequenceBreak(SequenceBreak b) { // GAP, REORDER, REPLAY or SKIP
                        alerts.add(b);                           // b.key(), b.expected(), b.actual(), b.missing()
                    }
                })
                .build();
        consumer.start();
        // end::sequence[]
        return consumer;
    }

    static void releaseAll(KafkaInboxConsumer consumer) {
        // tag::release[]
        for (SequenceBreak held : consumer.held()) {      // an operator looked at the hole and lets it go
            consumer.release(held.topic(), held.partition());
        }
        // end::release[]
    }
}
