package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.MeterReading;
import dev.outbox.OutboxMessage;
import dev.outbox.ParkedRecord;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.sql.SqlLeaderTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;

/**
 * Every Java snippet of the README's quick start, in compiled code that {@code ReadmeSnippetsTest} runs against an
 * embedded Postgres and an in-process Kafka. The regions between a {@code tag::} comment and its {@code end::}
 * comment are what the README shows; {@code ReadmeSnippetsTest} also checks that the README's copies (each after
 * a {@code <!-- snippet: ReadmeSnippets#<tag> -->} marker) still match them, character for character.
 */
final class ReadmeSnippets {
    private static final Logger log = LoggerFactory.getLogger(ReadmeSnippets.class);

    private ReadmeSnippets() {
    }

    static PostgresStore createSchema(DataSource dataSource) {
        // tag::schema[]
        PostgresStore store = PostgresStore.builder(dataSource)   // a pooled DataSource, e.g. HikariCP
                .build();                                        // table "outbox"; parked rows go to "outbox_parked"
        store.createSchema();                                    // idempotent: safe on every start-up
        // end::schema[]
        return store;
    }

    static void placeOrder(DataSource dataSource, PostgresStore store, long orderId, String customer)
            throws SQLException {
        // tag::write[]
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement s = c.prepareStatement("INSERT INTO orders (id, customer) VALUES (?, ?)")) {
                s.setLong(1, orderId);
                s.setString(2, customer);
                s.executeUpdate();
            }
            store.publisher().publish(c, OutboxMessage.builder("orders", customer)   // topic, key
                    .value("{\"orderId\":" + orderId + "}")
                    .header("type", "OrderPlaced")
                    .build());
            c.commit();   // the order and its message are committed together, or neither is
        }
        // end::write[]
    }

    static DispatcherListener listener() {
        // tag::listener[]
        DispatcherListener listener = new DispatcherListener() {
            @Override
            public void leaderAcquired(UUID leaderId) {
                log.info("This instance now publishes the outbox (leader id {})", leaderId);
            }

            @Override
            public void leaderFenced() {
                log.warn("Lost contact with Kafka: stopped publishing until it is sure to lead again");
            }

            @Override
            public void meterRead(MeterReading m) {
                log.info("{} records/s, {} in flight", Math.round(m.ratePerSecond()), m.inFlight());
            }

            @Override
            public void recordParked(ParkedRecord r) {
                log.error("Parked outbox row {} (key {}): {}", r.id(), r.key(), r.reason());
            }
        };
        // end::listener[]
        return listener;
    }

    static Dispatcher startDispatcher(PostgresStore store, String bootstrapServers, DispatcherListener listener) {
        // tag::dispatcher[]
        DispatcherConfig config = DispatcherConfig.defaults();
        KafkaMessageBroker broker = KafkaMessageBroker.builder()
                .bootstrapServers(bootstrapServers)         // or .properties(...) with TLS, SASL, ...
                .build();
        KafkaLeaderTransport election = KafkaLeaderTransport.builder()
                .bootstrapServers(bootstrapServers)
                .topic("orders-outbox-leader")              // one leader topic (and group) per outbox
                .dispatcherConfig(config)
                .deliveryTimeoutOf(broker)
                .build();
        Dispatcher dispatcher = Dispatcher.builder(store, broker)
                .config(config)
                .leaderTransport(election)                  // leave out if one instance only harvests the outbox
                .listener(listener)
                .build();
        dispatcher.start();                                 // on every instance: one leads, the others stand by
        // end::dispatcher[]
        return dispatcher;
    }

    /** Leader election in the database instead of over Kafka (docs/stores/postgres.md). */
    static Dispatcher databaseElectedDispatcher(PostgresStore store, KafkaMessageBroker broker, DispatcherConfig config) {
        // tag::databaseElection[]
        SqlLeaderTransport transport = SqlLeaderTransport.builder(store)   // the outbox's PostgresStore
                .dispatcherConfig(config)                 // heartbeat timeout and poll interval
                .deliveryTimeout(broker.deliveryTimeout()) // how long a send may still land after the leader stopped
                .build();
        Dispatcher dispatcher = Dispatcher.builder(store, broker).leaderTransport(transport).config(config).build();
        // end::databaseElection[]
        return dispatcher;
    }

    static void stopDispatcher(Dispatcher dispatcher) {
        // tag::shutdown[]
        dispatcher.close();   // stops marking, waits for in-flight records, flushes, stops its threads
        // end::shutdown[]
    }
}
