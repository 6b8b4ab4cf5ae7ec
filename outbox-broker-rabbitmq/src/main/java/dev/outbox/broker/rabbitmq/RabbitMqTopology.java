package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.Channel;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The consumer topology that keeps each key's order on RabbitMQ's side: the outbox publishes one record of a key at
 * a time, in order (its per-key schedule); a consumer sees them in that order if every record of a key lands in
 * the same queue and each queue is consumed by one consumer at a time.
 *
 * <ul>
 *   <li>The exchange is of type {@value #CONSISTENT_HASH} (the {@code rabbitmq_consistent_hash_exchange} plugin
 *       that ships with RabbitMQ: {@code rabbitmq-plugins enable rabbitmq_consistent_hash_exchange}): it hashes the
 *       routing key — the record's key — onto its bound queues, so a key always goes to the same queue while the
 *       bindings stay as they are.</li>
 *   <li>{@code partitions} durable queues {@code <exchange>.0} … {@code <exchange>.<n-1>}, each bound with weight
 *       {@code "1"}, each declared with {@code x-single-active-consumer=true}: however many instances of a service
 *       consume, one of them at a time gets a queue's messages, in order; when it goes, the next takes over where
 *       it left (unacknowledged messages are delivered again, first).</li>
 * </ul>
 * Consumers then acknowledge each message after processing it (as {@link RabbitMqInboxConsumer} does); a prefetch
 * above one is fine, because a single active consumer gets a queue's messages in order. Adding queues later moves
 * some keys to other queues: drain the old ones first.
 *
 * <p>Immutable and thread-safe; {@link #declare} uses the caller's channel.
 */
public final class RabbitMqTopology {
    /** The exchange type of the consistent-hash plugin: {@value}. */
    public static final String CONSISTENT_HASH = "x-consistent-hash";
    /** The queue argument that makes a queue deliver to one consumer at a time: {@value}. */
    public static final String SINGLE_ACTIVE_CONSUMER = "x-single-active-consumer";

    private final String exchange;
    private final List<String> queues;

    private RabbitMqTopology(String exchange, int partitions) {
        this.exchange = exchange;
        List<String> names = new ArrayList<>(partitions);
        for (int i = 0; i < partitions; i++) {
            names.add(exchange + "." + i);
        }
        this.queues = List.copyOf(names);
    }

    /**
     * The per-key topology of {@code exchange} with {@code partitions} queues.
     *
     * @param exchange   the exchange records are published to (by default the topic's name); not blank
     * @param partitions how many queues, 1 to 1,000: how many consumers can work at once
     * @return the topology, not declared yet
     * @throws IllegalArgumentException naming the value if the exchange is blank or {@code partitions} out of range
     */
    public static RabbitMqTopology perKey(String exchange, int partitions) {
        if (exchange == null || exchange.isBlank()) {
            throw new IllegalArgumentException("exchange must not be blank: '" + exchange + "'");
        }
        if (partitions < 1 || partitions > 1_000) {
            throw new IllegalArgumentException("partitions of exchange '" + exchange + "' must be 1 to 1000, was "
                    + partitions);
        }
        return new RabbitMqTopology(exchange, partitions);
    }

    /**
     * The exchange's name.
     *
     * @return the exchange records are published to
     */
    public String exchange() {
        return exchange;
    }

    /**
     * The queues, in order; a key's queue is chosen by the exchange's hash.
     *
     * @return the queue names, {@code <exchange>.<i>}
     */
    public List<String> queues() {
        return queues;
    }

    /**
     * Declares the exchange (durable), the queues (durable, single active consumer) and their bindings; does nothing
     * to what already exists as declared. Needs the configure permission on them.
     *
     * @param channel a channel to declare on; not null. RabbitMQ closes it if something exists with other settings
     *                (a {@code PRECONDITION_FAILED} in the {@link IOException})
     * @throws IOException if the node refused a declaration (for example, the plugin is not enabled:
     *                     {@code invalid exchange type 'x-consistent-hash'})
     */
    public void declare(Channel channel) throws IOException {
        Objects.requireNonNull(channel, "channel");
        channel.exchangeDeclare(exchange, CONSISTENT_HASH, true);
        for (String queue : queues) {
            channel.queueDeclare(queue, true, false, false, Map.of(SINGLE_ACTIVE_CONSUMER, true));
            channel.queueBind(queue, exchange, "1");
        }
    }

    @Override
    public String toString() {
        return "RabbitMqTopology{exchange='" + exchange + "', queues=" + queues.size() + '}';
    }
}
