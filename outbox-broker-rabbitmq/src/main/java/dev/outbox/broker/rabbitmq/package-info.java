/**
 * The RabbitMQ adapter: RabbitMqMessageBroker (the MessageBroker port, with publisher confirms and mandatory
 * publishing), RabbitMqHeaders (how a message travels, both ways), RabbitMqTopology (the per-key consumer topology)
 * and RabbitMqInboxConsumer, which consumes into a database through the inbox. API for applications that configure
 * them; brokers and consumers are thread-safe, builders are not.
 */
package dev.outbox.broker.rabbitmq;
