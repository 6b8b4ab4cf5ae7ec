package dev.outbox.broker.kafka;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.DisconnectException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Instant;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** Which Kafka failures park a record at once, which are outages of the broker, and which count as attempts. */
class KafkaFailureClassificationTest {
    private static final OutboxRecord RECORD = new OutboxRecord(7, Instant.EPOCH,
            OutboxMessage.of("orders", "k-7", "v"), 0, UUID.randomUUID());

    static Stream<Exception> permanent() {
        return Stream.of(new RecordTooLargeException("too large"), new RecordBatchTooLargeException("batch"),
                new InvalidTopicException("bad"), new TopicAuthorizationException(Set.of("orders")),
                new ClusterAuthorizationException("no"), new SerializationException("ser"),
                new InvalidRecordException("compacted topic needs a key"), new InvalidTimestampException("old"));
    }

    static Stream<Exception> outage() {
        return Stream.of(new TimeoutException("Expiring 1 record(s)"), new NotEnoughReplicasException("isr"),
                new NotLeaderOrFollowerException("moved"), new DisconnectException("gone"),
                new CorruptRecordException("crc"), new SaslAuthenticationException("bad password"),
                new IllegalStateException("Cannot perform operation after producer has been closed"));
    }

    @ParameterizedTest
    @MethodSource("permanent")
    void permanentFailures(Exception e) {
        DeliveryException d = KafkaErrors.classify(RECORD, new CompletionException(e));
        assertThat(d.isPermanent()).isTrue();
        assertThat(d.getCause()).isSameAs(e);
        assertThat(d).hasMessageContaining("record 7").hasMessageContaining("'orders'").hasMessageContaining("'k-7'");
    }

    @ParameterizedTest
    @MethodSource("outage")
    void failuresOfTheBrokerRatherThanTheRecordAreOutages(Exception e) {
        DeliveryException d = KafkaErrors.classify(RECORD, e);
        assertThat(d.isPermanent()).isFalse();
        assertThat(d.isOutage()).as("never counted towards the record's attempts, never parked").isTrue();
        assertThat(d.getCause()).isSameAs(e);
    }

    @ParameterizedTest
    @MethodSource("unknown")
    void anythingElseIsRetriableAndCounted(Exception e) {
        DeliveryException d = KafkaErrors.classify(RECORD, e);
        assertThat(d.kind()).isEqualTo(DeliveryException.Kind.RETRIABLE);
        assertThat(d.getCause()).isSameAs(e);
    }

    static Stream<Exception> unknown() {
        return Stream.of(new org.apache.kafka.common.KafkaException("something the client cannot name"),
                new RuntimeException("a bug in a serializer or interceptor"));
    }

    @Test
    void aHugeKeyIsQuotedOnlyInPart() {
        OutboxRecord huge = new OutboxRecord(1, Instant.EPOCH, OutboxMessage.of("t", "k".repeat(1_048_576), "v"), 0,
                null);
        DeliveryException d = KafkaErrors.classify(huge, new RecordTooLargeException("too large"));
        assertThat(d.getMessage().length()).isLessThan(400);
        assertThat(d.getMessage()).contains("1,048,576 characters");
    }
}
