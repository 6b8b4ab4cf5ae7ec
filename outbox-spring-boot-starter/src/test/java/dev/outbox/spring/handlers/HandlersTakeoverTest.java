package dev.outbox.spring.handlers;

import dev.outbox.Dispatcher;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.PayloadSerializer;
import dev.outbox.spi.Store;
import dev.outbox.spring.OutboxDispatcherLifecycle;
import dev.outbox.spring.OutboxPublisher;
import dev.outbox.spring.handlers.HandlersTestApplication.OrderPlaced;
import dev.outbox.testkit.Await;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two instances of an application with {@code outbox.broker=handlers} on one Postgres outbox, leader elected over
 * Kafka: only the leader's handlers run; the leader dies mid-run — its handlers hang, its drain times out, its
 * handler threads are interrupted with records in flight — and the standby's handlers finish the work, every order
 * handled, in order per customer, repeats bounded by what was in flight.
 */
class HandlersTakeoverTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(90);
    private static final int ORDERS = 200;
    private static final int CUSTOMERS = 10;

    @Test
    void whenTheLeaderDiesMidRunTheStandbysHandlersFinishTheWork() {
        Map<String, String> p = HandlersProperties.of("starter_handlers_takeover", "starter-handlers-takeover-leader");
        p.put("outbox.dispatcher.drain-timeout", "1s");
        p.put("outbox.dispatcher.max-in-flight-records", "50");
        p.put("outbox.dispatcher.mark-batch-size", "20");
        ConfigurableApplicationContext first = start(p);
        ConfigurableApplicationContext second = start(p);
        try {
            Await.untilOrFail(() -> dispatcher(first).isLeader() || dispatcher(second).isLeader(), TIMEOUT,
                    () -> "a leader elected");
            ConfigurableApplicationContext leader = dispatcher(first).isLeader() ? first : second;
            ConfigurableApplicationContext standby = leader == first ? second : first;
            OrderHandlers leaderHandlers = leader.getBean(OrderHandlers.class);
            OrderHandlers standbyHandlers = standby.getBean(OrderHandlers.class);
            PayloadSerializer serializer = standby.getBean(PayloadSerializer.class);
            OutboxPublisher outbox = standby.getBean(OutboxPublisher.class);
            standby.getBean(TransactionTemplate.class).executeWithoutResult(tx -> {
                for (int i = 0; i < ORDERS; i++) {
                    String customer = "takeover-" + (i % CUSTOMERS);
                    outbox.publish(serializer.message("handled-orders", customer, new OrderPlaced(customer, i)));
                }
            });

            Await.untilOrFail(() -> leaderHandlers.handled.size() >= ORDERS / 3, TIMEOUT,
                    () -> "the leader handled " + leaderHandlers.handled.size());
            leaderHandlers.hang = new CountDownLatch(1); // never opened: the leader's handlers hang from here on
            Dispatcher dying = dispatcher(leader);
            Await.untilOrFail(() -> dying.inFlightRecords() > 0, TIMEOUT, () -> "records in flight on the leader");
            int maxInFlight = 50;
            leader.close(); // the drain times out; the hung handlers are interrupted, their records stay in the outbox

            Store store = standby.getBean(Store.class);
            Await.untilOrFail(() -> store.backlog() == 0 && handledIds(leaderHandlers, standbyHandlers).size() == ORDERS,
                    TIMEOUT, () -> "backlog " + store.backlog() + ", handled "
                            + handledIds(leaderHandlers, standbyHandlers).size());
            assertThat(standbyHandlers.handled).as("the standby's handlers finished the work").isNotEmpty();
            Set<Long> leaderIds = new HashSet<>();
            leaderHandlers.handled.forEach(r -> leaderIds.add(r.id()));
            long twice = standbyHandlers.handled.stream().filter(r -> leaderIds.contains(r.id())).count();
            assertThat(twice).as("orders handled by both: only those in flight when the leader died")
                    .isLessThanOrEqualTo(maxInFlight);
            Map<String, List<Integer>> perCustomer = new LinkedHashMap<>();
            for (OutboxRecord r : concat(leaderHandlers.handled, standbyHandlers.handled)) {
                perCustomer.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(order(r, serializer));
            }
            perCustomer.forEach((customer, seen) -> assertThat(seen).as(customer).isSorted());
        } finally {
            second.close();
            first.close();
        }
    }

    private static int order(OutboxRecord r, PayloadSerializer serializer) {
        return serializer.deserialize(r.message().value(), OrderPlaced.class).order();
    }

    private static List<OutboxRecord> concat(List<OutboxRecord> a, List<OutboxRecord> b) {
        List<OutboxRecord> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    private static Set<Long> handledIds(OrderHandlers a, OrderHandlers b) {
        Set<Long> ids = new HashSet<>();
        concat(a.handled, b.handled).forEach(r -> ids.add(r.id()));
        return ids;
    }

    private static ConfigurableApplicationContext start(Map<String, String> properties) {
        return new SpringApplicationBuilder(HandlersTestApplication.class).web(WebApplicationType.NONE)
                .run(properties.entrySet().stream().map(e -> "--" + e.getKey() + "=" + e.getValue())
                        .toArray(String[]::new));
    }

    private static Dispatcher dispatcher(ConfigurableApplicationContext context) {
        return context.getBean(OutboxDispatcherLifecycle.class).dispatcher();
    }
}
