package dev.outbox.spring.handlers;

import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.handlers.PermanentFailureException;
import dev.outbox.spring.OutboxFallbackHandler;
import dev.outbox.spring.OutboxHandler;
import dev.outbox.spring.handlers.HandlersTestApplication.OrderPlaced;
import dev.outbox.spring.handlers.HandlersTestApplication.PaymentFailed;
import org.springframework.stereotype.Component;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The handlers of the test application, recording what they were given. Orders of customer {@code flaky} fail
 * twice, then succeed once every order of the other customers was handled (so those were not held behind them);
 * order number -1 is refused for good; while {@link #hang} is set, every order waits for it.
 */
@Component
public class OrderHandlers {
    /** Orders handled, per customer, in the order they were handled. */
    public final Map<String, List<Integer>> orders = new ConcurrentHashMap<>();
    /** Every order handled, with its record. */
    public final List<OutboxRecord> handled = new CopyOnWriteArrayList<>();
    public final Map<String, List<Integer>> payments = new ConcurrentHashMap<>();
    public final List<String> fallbacks = new CopyOnWriteArrayList<>();
    public final List<ParkedRecord> defaultFallbacks = new CopyOnWriteArrayList<>();
    public final List<Integer> flakyAttempts = new CopyOnWriteArrayList<>();
    public final AtomicInteger flakyFailures = new AtomicInteger();
    public volatile CountDownLatch othersDone = new CountDownLatch(0);
    /** While not null, handlers wait on it (a leader that hangs mid-run). */
    public volatile CountDownLatch hang;

    @OutboxHandler(topic = "handled-orders")
    void order(OrderPlaced order, OutboxRecord record) throws InterruptedException {
        CountDownLatch h = hang;
        if (h != null) {
            h.await();
        }
        if (order.order() == -1) {
            throw new PermanentFailureException("order -1 does not exist");
        }
        if (order.customer().equals("flaky")) {
            flakyAttempts.add(record.attempts());
            if (flakyFailures.incrementAndGet() <= 2) {
                throw new IllegalStateException("the mail server answered 451, try later");
            }
            if (!othersDone.await(30, TimeUnit.SECONDS)) {
                throw new AssertionError("the other customers' orders were held behind the flaky one");
            }
        } else {
            othersDone.countDown();
        }
        orders.computeIfAbsent(order.customer(), k -> new CopyOnWriteArrayList<>()).add(order.order());
        handled.add(record);
    }

    @OutboxHandler(type = "PaymentFailed")
    void payment(PaymentFailed payment) {
        payments.computeIfAbsent(payment.customer(), k -> new CopyOnWriteArrayList<>()).add(payment.payment());
    }

    @OutboxFallbackHandler(topic = "handled-orders")
    void orderParked(ParkedRecord parked, OrderPlaced order) {
        fallbacks.add(order.customer() + "/" + order.order() + ": " + parked.reason());
    }

    @OutboxFallbackHandler
    void anyParked(ParkedRecord parked) {
        defaultFallbacks.add(parked);
    }
}
