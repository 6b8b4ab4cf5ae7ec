package dev.outbox.it;

import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The broker a scenario's data path runs on: what the harness needs of it beyond the outbox's own
 * {@link MessageBroker} port. {@link KafkaDataBroker} is the reference path's; a suite on another broker brings its
 * own (the integration tests' {@code RabbitMqDataBroker}). The rest of the harness — writers, nodes, leadership,
 * faults, the checks of {@link Scenario#finish()} — is the same for every broker.
 */
interface DataBroker {

    /** The broker's name for the summary, e.g. {@code Kafka}. */
    String name();

    /**
     * Creates the data topic {@code topic}: {@code partitions} partitions (or queues) over which a consumer keeps each
     * key's order, taking records up to {@code maxMessageBytes}. A topic named otherwise must stay missing: a record
     * for it fails permanently (the poison record "poison-missing").
     */
    void createTopic(String topic, int partitions, int maxMessageBytes);

    /**
     * A new broker client for one dispatcher named {@code client}: a send completes within {@code deliveryTimeout},
     * a record larger than {@code maxMessageBytes} fails permanently (the poison record "poison-big").
     */
    MessageBroker newBroker(String client, Duration deliveryTimeout, int maxMessageBytes);

    /** A new, unstarted consumer of every partition (queue) of {@code topic}, from the beginning. */
    DataWatcher newWatcher(String topic);

    /**
     * A check of whether {@code watcher} has consumed everything the broker holds for {@code topic}; made once the
     * dispatchers are closed (nothing is published any more), and asked until it holds, so that late copies
     * (duplicates) are counted too.
     */
    BooleanSupplier consumedAll(String topic, DataWatcher watcher);

    /**
     * Kafka's bootstrap servers, for the leader group of {@link Scenario.Election#KAFKA} and for downstream consumers
     * on Kafka ({@link Scenario.Inboxes}); null for a broker that is not Kafka.
     */
    String kafkaBootstrap();
}
