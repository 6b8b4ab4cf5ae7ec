/**
 * The Kafka adapter: KafkaMessageBroker (the MessageBroker port), the leader transports over a consumer group
 * (KafkaLeaderTransport, KafkaShardedLeaderTransport) and the consumer's KafkaInboxConsumer. API for
 * applications that configure them; brokers and transports are thread-safe, builders are not.
 */
package dev.outbox.broker.kafka;
