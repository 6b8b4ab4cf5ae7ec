package dev.outbox.spring.handlers;

import dev.outbox.testkit.Capabilities;

import dev.outbox.OutboxMessage;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.PayloadSerializer;
import dev.outbox.spi.Store;
import dev.outbox.spring.OutboxPublisher;
import dev.outbox.spring.handlers.HandlersTestApplication.OrderPlaced;
import dev.outbox.spring.handlers.HandlersTestApplication.PaymentFailed;
import dev.outbox.testkit.Await;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code outbox.broker=handlers} on a real PostgreSQL, leader elected over a real Kafka: {@code @OutboxHandler}
 * methods for two event types, one failing twice then succeeding, one failing for good (parked, its
 * {@code @OutboxFallbackHandler} called).
 */
@SpringBootTest(classes = HandlersTestApplication.class)
class HandlersOutboxTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @Autowired
    OutboxPublisher outbox;
    @Autowired
    PayloadSerializer serializer;
    @Autowired
    TransactionTemplate transaction;
    @Autowired
    OrderHandlers handlers;
    @Autowired
    Store store;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        HandlersProperties.register(registry, "starter_handlers", "starter-handlers-leader");
    }

    private void publish(List<OutboxMessage> messages) {
        transaction.executeWithoutResult(tx -> outbox.publish(messages));
    }

    private OutboxMessage order(String customer, int order) {
        return serializer.message("handled-orders", customer, new OrderPlaced(customer, order));
    }

    private OutboxMessage payment(String customer, int payment) {
        OutboxMessage m = serializer.message("payments", customer, new PaymentFailed(customer, payment));
        return OutboxMessage.builder(m.topic(), m.key()).value(m.value())
                .header(PayloadSerializer.CONTENT_TYPE_HEADER, serializer.contentType())
                .header("type", "PaymentFailed").build();
    }

    @Test
    void twoEventTypesReachTheirHandlersInOrderPerKey() {
        List<OutboxMessage> messages = new java.util.ArrayList<>();
        for (int i = 0; i < 40; i++) {
            messages.add(order("two-types-" + (i % 4), i));
            messages.add(payment("two-types-" + (i % 4), i));
        }
        publish(messages);

        Await.untilOrFail(() -> count(handlers.payments, "two-types-") == 40 && count(handlers.orders, "two-types-")
                == 40, TIMEOUT, () -> handlers.orders + " " + handlers.payments);
        handlers.orders.forEach((k, v) -> assertThat(v).as(k).isSorted());
        handlers.payments.forEach((k, v) -> assertThat(v).as(k).isSorted());
    }

    @Test
    void aHandlerFailingTwiceIsRetriedInItsKeysOrderWithoutHoldingOtherKeys() {
        handlers.othersDone = new CountDownLatch(30);
        List<OutboxMessage> messages = new java.util.ArrayList<>(List.of(order("flaky", 1), order("flaky", 2),
                order("flaky", 3)));
        for (int i = 0; i < 30; i++) {
            messages.add(order("steady-" + (i % 3), i));
        }
        publish(messages);

        Await.untilOrFail(() -> handlers.orders.getOrDefault("flaky", List.of()).size() == 3, TIMEOUT,
                () -> "flaky: " + handlers.orders.get("flaky") + ", attempts " + handlers.flakyAttempts);
        assertThat(handlers.orders.get("flaky")).containsExactly(1, 2, 3);
        assertThat(handlers.flakyAttempts).as("attempts before each try of order 1, then orders 2 and 3")
                .containsExactly(0, 1, 2, 0, 0);
        assertThat(handlers.othersDone.getCount()).isZero();
    }

    @Test
    void aPermanentFailureIsParkedItsFallbackCalledAndTheKeyMovesOn() {
        publish(List.of(order("refused", 1), order("refused", -1), order("refused", 2),
                OutboxMessage.of("nobody-handles-this", "refused", "{}")));

        Await.untilOrFail(() -> handlers.fallbacks.size() == 1 && handlers.defaultFallbacks.stream()
                        .anyMatch(p -> p.topic().equals("nobody-handles-this")), TIMEOUT,
                () -> "fallbacks " + handlers.fallbacks + ", default " + handlers.defaultFallbacks);
        assertThat(handlers.fallbacks).singleElement().asString()
                .startsWith("refused/-1: ").contains("permanent", "order -1 does not exist");
        Await.untilOrFail(() -> handlers.orders.getOrDefault("refused", List.of()).size() == 2, TIMEOUT,
                () -> "refused: " + handlers.orders.get("refused"));
        assertThat(handlers.orders.get("refused")).containsExactly(1, 2);
        List<ParkedRecord> parked = Capabilities.parkedRecords(store).parked(100).stream().filter(p -> "refused".equals(p.key())).toList();
        assertThat(parked).hasSize(2).anySatisfy(p -> assertThat(p.reason()).contains("order -1 does not exist"))
                .anySatisfy(p -> assertThat(p.reason()).contains("no handler", "'nobody-handles-this'"));
    }

    private static long count(java.util.Map<String, List<Integer>> byKey, String prefix) {
        return byKey.entrySet().stream().filter(e -> e.getKey().startsWith(prefix))
                .mapToLong(e -> e.getValue().size()).sum();
    }
}
