package dev.outbox.broker.kafka;

import org.apache.kafka.clients.producer.ProducerConfig;

import java.util.Map;

/**
 * The producer settings {@link KafkaMessageBroker} enforces, and why: each one a guarantee depends on (idempotence,
 * {@code acks=all}, at most 5 requests in flight, bounded delivery and blocking times, keys kept for partitioning),
 * checked through {@link KafkaSettings#require} / {@link KafkaSettings#forbid} or with a message naming the value, the
 * bound and the reason. See the class comment of {@link KafkaMessageBroker} for the list. Stateless.
 */
final class KafkaProducerSettings {
    private KafkaProducerSettings() {
    }

    /**
     * The producer configuration for the user's settings {@code s}, with the enforced settings and defaults applied.
     *
     * @throws IllegalArgumentException naming the setting and value that would break a guarantee
     */
    static Map<String, Object> enforce(KafkaSettings s) {
        String servers = s.string(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (servers == null || servers.isEmpty()) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.BOOTSTRAP_SERVERS_CONFIG
                    + "' must be set");
        }
        s.require(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
                "without idempotence a retried batch can be written twice or after a later batch of the same"
                        + " partition, breaking per-key order");
        String acks = s.string(ProducerConfig.ACKS_CONFIG);
        if (acks != null && !acks.equalsIgnoreCase("all") && !acks.equals("-1")) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.ACKS_CONFIG
                    + "' must be 'all', was '" + acks + "': a record is purged from the outbox once"
                    + " acknowledged, so it must be on every in-sync replica by then");
        }
        s.put(ProducerConfig.ACKS_CONFIG, "all");
        long inFlight = s.longValue(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
        if (inFlight < 1 || inFlight > 5) {
            throw new IllegalArgumentException("Kafka property '"
                    + ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION + "' must be between 1 and 5, was "
                    + inFlight + ": the idempotent producer keeps order only up to 5 requests in flight");
        }
        s.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, (int) inFlight);
        long retries = s.longValue(ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE);
        if (retries < 1) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.RETRIES_CONFIG
                    + "' must be at least 1, was " + retries + ": delivery.timeout.ms bounds retries instead");
        }
        s.put(ProducerConfig.RETRIES_CONFIG, (int) Math.min(retries, Integer.MAX_VALUE));
        if (s.booleanValue(ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG, false)) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG
                    + "' must not be true, was '" + s.string(ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG)
                    + "': records of one key must land on one partition to stay in order");
        }
        s.forbid(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "set it with KafkaMessageBroker.Builder.transactionalId(...),"
                + " which gives every shard an id of its own");
        s.forbid(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "keys are the rows' keys, serialized as UTF-8");
        s.forbid(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "values are the rows' bytes, sent as they are");

        long delivery = s.longValue(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, KafkaMessageBroker.DEFAULT_DELIVERY_TIMEOUT.toMillis());
        if (delivery < 1 || delivery > KafkaMessageBroker.MAX_DELIVERY_TIMEOUT.toMillis()) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG
                    + "' must be between 1 and " + KafkaMessageBroker.MAX_DELIVERY_TIMEOUT.toMillis() + " ms, was " + delivery
                    + ": every send must complete within a bound shorter than a leader hand-over");
        }
        long linger = s.longValue(ProducerConfig.LINGER_MS_CONFIG, 5);
        if (linger < 0) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.LINGER_MS_CONFIG
                    + "' must not be negative, was " + linger);
        }
        long request = s.longValue(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
                Math.max(1, Math.min(30_000, (delivery - linger) / 2)));
        if (request < 1 || linger + request > delivery) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG
                    + "' (" + delivery + " ms) must be at least linger.ms (" + linger
                    + " ms) + request.timeout.ms (" + request + " ms)");
        }
        // A metadata wait that runs out is followed by an admin check (does the topic exist?) that must also
        // finish within delivery.timeout.ms: by default, leave it at least half.
        long maxBlock = s.longValue(ProducerConfig.MAX_BLOCK_MS_CONFIG,
                Math.min(KafkaMessageBroker.DEFAULT_MAX_BLOCK.toMillis(), delivery / 2));
        if (maxBlock < 0 || maxBlock > delivery) {
            throw new IllegalArgumentException("Kafka property '" + ProducerConfig.MAX_BLOCK_MS_CONFIG
                    + "' must be between 0 and delivery.timeout.ms (" + delivery + " ms), was " + maxBlock
                    + ": send must never block the dispatcher longer than a delivery may take");
        }
        s.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) delivery);
        s.put(ProducerConfig.LINGER_MS_CONFIG, (int) linger);
        s.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) request);
        s.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, maxBlock);
        return s.toMap();
    }
}
