package dev.outbox.broker.kafka;

import dev.outbox.Header;
import dev.outbox.MessageIds;
import dev.outbox.OutboxRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * How an outbox record becomes a Kafka record: its topic, key and value; its headers in order, then the outbox's own
 * (the message id, the creation time) after them, so that {@code Headers.lastHeader(name)} finds the outbox's value;
 * and its timestamp ({@link KafkaMessageBroker.RecordTimestamp}). Immutable and thread-safe.
 */
final class KafkaRecordMapper {
    private final KafkaMessageBroker.RecordTimestamp timestamp;
    private final String messageIdHeader;
    private final String createdAtHeader;

    /**
     * @param timestamp       which time the record carries
     * @param messageIdHeader the message id's header, or null for none
     * @param createdAtHeader the creation time's header, or null for none
     */
    KafkaRecordMapper(KafkaMessageBroker.RecordTimestamp timestamp, String messageIdHeader, String createdAtHeader) {
        this.timestamp = timestamp;
        this.messageIdHeader = messageIdHeader;
        this.createdAtHeader = createdAtHeader;
    }

    KafkaMessageBroker.RecordTimestamp timestamp() {
        return timestamp;
    }

    ProducerRecord<String, byte[]> map(OutboxRecord record) {
        List<org.apache.kafka.common.header.Header> headers = new ArrayList<>(record.message().headers().size() + 2);
        for (Header h : record.message().headers()) {
            headers.add(new KafkaHeader(h.name(), h.value()));
        }
        if (messageIdHeader != null && record.messageId() != null) {
            headers.add(new KafkaHeader(messageIdHeader, MessageIds.toHeader(record.messageId())));
        }
        if (createdAtHeader != null) {
            headers.add(new KafkaHeader(createdAtHeader, record.createdAt().toString()
                    .getBytes(StandardCharsets.US_ASCII)));
        }
        Long ts = timestamp == KafkaMessageBroker.RecordTimestamp.CREATED_AT ? record.createdAt().toEpochMilli() : null;
        return new ProducerRecord<>(record.topic(), null, ts, record.key(), record.message().value(), headers);
    }

    private record KafkaHeader(String key, byte[] value) implements org.apache.kafka.common.header.Header {
    }
}
