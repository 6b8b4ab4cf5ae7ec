package dev.outbox.examples;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How {@link WebhookMessageBroker} classifies what can go wrong, beyond the contract. */
class WebhookMessageBrokerTest {
    private static final WebhookReceiver receiver = WebhookReceiver.start();

    @ParameterizedTest(name = "HTTP {0} -> permanent: {1}")
    @CsvSource({"400, true", "404, true", "413, true", "408, false", "429, false", "500, false", "503, false"})
    void statusDecidesWhetherTheFailureIsPermanent(int status, boolean permanent) {
        try (WebhookMessageBroker broker = WebhookMessageBroker.builder(receiver.endpoint()).build()) {
            DeliveryException failure = failureOf(broker, record("status-" + status));

            assertThat(failure.isPermanent()).as("permanent").isEqualTo(permanent);
            assertThat(failure).hasMessageContaining("answered " + status);
        }
    }

    @Test
    void aReceiverThatDoesNotAnswerFailsRetriablyWithinTheRequestTimeout() {
        try (WebhookMessageBroker broker = WebhookMessageBroker.builder(receiver.endpoint())
                .requestTimeout(Duration.ofMillis(300)).build()) {
            Instant start = Instant.now();
            DeliveryException failure = failureOf(broker, record("hang"));

            assertThat(failure.isPermanent()).isFalse();
            assertThat(Duration.between(start, Instant.now())).isLessThan(Duration.ofSeconds(5));
        }
    }

    @Test
    void aReceiverThatIsDownFailsRetriably() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // free once closed: nothing listens there
        }
        try (WebhookMessageBroker broker = WebhookMessageBroker.builder(URI.create("http://127.0.0.1:" + port + "/"))
                .connectTimeout(Duration.ofSeconds(1)).build()) {
            assertThat(failureOf(broker, record("k")).isPermanent()).isFalse();
        }
    }

    @Test
    void aNonHttpEndpointIsRejected() {
        assertThatThrownBy(() -> WebhookMessageBroker.builder(URI.create("ftp://example.org/")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ftp://example.org/");
    }

    @AfterAll
    static void stopReceiver() {
        receiver.close();
    }

    private static OutboxRecord record(String key) {
        return new OutboxRecord(1, Instant.now(), OutboxMessage.of("t-" + UUID.randomUUID(), key, "v"), 0, null);
    }

    private static DeliveryException failureOf(WebhookMessageBroker broker, OutboxRecord record) {
        CompletableFuture<Void> f = broker.send(record).toCompletableFuture();
        Throwable t = assertThatThrownBy(() -> f.get(30, TimeUnit.SECONDS)).actual();
        Throwable cause = t instanceof CompletionException || t.getCause() != null ? t.getCause() : t;
        assertThat(cause).isInstanceOf(DeliveryException.class);
        return (DeliveryException) cause;
    }
}
