package dev.outbox.broker.kafka;

import dev.outbox.Inbox;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * The validated configuration of a {@link KafkaInboxConsumer}, as its builder produced it; immutable.
 *
 * @param topics          the topics to consume, at least one
 * @param dataSource      the database of the inbox and of the effects
 * @param inbox           the inbox
 * @param consumerName    the inbox consumer name (the group id unless set)
 * @param handler         the record handler
 * @param listener        the listener
 * @param messageIdHeader the message id header, or null for none
 * @param maxAttempts     handler attempts per record
 * @param initialBackoff  the first retry wait
 * @param maxBackoff      the longest retry wait
 * @param purgeInterval   the time between two purges of expired inbox entries
 * @param onSequenceBreak          what the key sequence check does on a break
 * @param sequenceHoldTimeout      how long a partition held on a break waits at most
 * @param sequenceKeysPerPartition the most keys whose last number the check remembers per partition
 * @param kafka           the Kafka consumer properties, with the enforced settings checked
 */
record InboxConsumerSettings(List<String> topics, DataSource dataSource, Inbox inbox, String consumerName,
                             KafkaInboxConsumer.RecordHandler handler, KafkaInboxConsumer.Listener listener,
                             String messageIdHeader, int maxAttempts, Duration initialBackoff, Duration maxBackoff,
                             Duration purgeInterval, OnSequenceBreak onSequenceBreak, Duration sequenceHoldTimeout,
                             int sequenceKeysPerPartition, Map<String, Object> kafka) {
    InboxConsumerSettings {
        topics = List.copyOf(topics);
    }
}
