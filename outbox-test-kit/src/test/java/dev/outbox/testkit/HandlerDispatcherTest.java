package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.handlers.HandlerMessageBroker;
import dev.outbox.handlers.PermanentFailureException;
import dev.outbox.spi.PayloadSerializer;
import dev.outbox.testkit.TextEvents.OrderPlaced;
import dev.outbox.testkit.TextEvents.PaymentFailed;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * In-process handlers behind the dispatcher, over the in-memory fakes: two event types routed by topic and by type
 * header, a handler failing twice then succeeding (retried, its key's order kept, other keys not held), one failing
 * for good (parked, its fallback called), and a crash of the leader with a standby finishing the work.
 */
class HandlerDispatcherTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final List<Dispatcher> dispatchers = new ArrayList<>();
    private final List<HandlerMessageBroker> brokers = new ArrayList<>();

    private static DispatcherConfig.Builder fastConfig() {
        return DispatcherConfig.builder()
                .markBatchSize(20)
                .maxInFlightRecords(40)
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .heartbeatTimeout(Duration.ofMillis(300))
                .ioErrorBackoff(Duration.ofMillis(5))
                .maxIoErrorBackoff(Duration.ofMillis(50))
                .drainTimeout(Duration.ofSeconds(5))
                .metricsInterval(Duration.ofMillis(50));
    }

    private Dispatcher start(InMemoryStore store, HandlerMessageBroker handlers, Dispatcher.Builder builder) {
        brokers.add(handlers);
        Dispatcher d = builder.observer(handlers).name("hd" + NAMES.incrementAndGet()).build();
        dispatchers.add(d);
        d.start();
        return d;
    }

    private Dispatcher start(InMemoryStore store, HandlerMessageBroker handlers, DispatcherConfig config) {
        return start(store, handlers, Dispatcher.builder(store, handlers).config(config));
    }

    @AfterEach
    void tearDown() {
        dispatchers.forEach(Dispatcher::close);
        brokers.forEach(b -> b.close(Duration.ofSeconds(1)));
    }

    private static final PayloadSerializer TEXT = TextEvents.SERIALIZER;

    private static void write(InMemoryStore store, List<OutboxMessage> messages) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            tx.publish(messages);
            tx.commit();
        }
    }

    private static OutboxMessage order(String customer, String order) {
        return TEXT.message("orders", customer, new OrderPlaced(order));
    }

    private static OutboxMessage payment(String customer, String payment) {
        OutboxMessage m = TEXT.message("payments", customer, new PaymentFailed(payment));
        return OutboxMessage.builder(m.topic(), m.key()).value(m.value()).header("content-type", "text/plain")
                .header("type", "PaymentFailed").build();
    }

    @Test
    void twoEventTypesReachTheirHandlersDecodedAndInOrderPerKey() {
        InMemoryStore store = new InMemoryStore();
        Map<String, List<String>> orders = new ConcurrentHashMap<>();
        Map<String, List<String>> payments = new ConcurrentHashMap<>();
        HandlerMessageBroker handlers = HandlerMessageBroker.builder(TEXT)
                .handler("orders", OrderPlaced.class, (o, r) ->
                        orders.computeIfAbsent(r.key(), k -> new CopyOnWriteArrayList<>()).add(o.order()))
                .typeHandler("PaymentFailed", PaymentFailed.class, (p, r) ->
                        payments.computeIfAbsent(r.key(), k -> new CopyOnWriteArrayList<>()).add(p.payment()))
                .build();
        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            messages.add(order("c" + (i % 5), String.format("o%03d", i)));
            messages.add(payment("c" + (i % 5), String.format("p%03d", i)));
        }
        write(store, messages);

        start(store, handlers, fastConfig().build());

        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(orders).hasSize(5).allSatisfy((k, v) -> assertThat(v).hasSize(20).isSorted());
        assertThat(payments).hasSize(5).allSatisfy((k, v) -> assertThat(v).hasSize(20).isSorted());
        assertThat(store.parkedRows()).isEmpty();
    }

    @Test
    void aHandlerFailingTwiceIsRetriedInItsKeysOrderWithoutHoldingOtherKeys() {
        InMemoryStore store = new InMemoryStore();
        int others = 60;
        CountDownLatch othersDone = new CountDownLatch(others);
        AtomicInteger calls = new AtomicInteger();
        List<Integer> attemptsSeen = new CopyOnWriteArrayList<>();
        List<String> flakyKey = new CopyOnWriteArrayList<>();
        HandlerMessageBroker handlers = HandlerMessageBroker.builder(TEXT)
                .handler("orders", OrderPlaced.class, (o, r) -> {
                    if (!r.key().equals("flaky")) {
                        othersDone.countDown();
                        return;
                    }
                    if (o.order().equals("first")) {
                        attemptsSeen.add(r.attempts());
                        if (calls.incrementAndGet() <= 2) {
                            throw new IllegalStateException("the mail server said 451, try again later");
                        }
                        // Succeeds only once every other key's records were handled: had they waited behind this
                        // key's retries, the latch would never open.
                        if (!othersDone.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                            throw new AssertionError("other keys were held behind the failing one");
                        }
                    }
                    flakyKey.add(o.order());
                })
                .handlerTimeout(Duration.ofMinutes(1))
                .build();
        List<OutboxMessage> messages = new ArrayList<>();
        messages.add(order("flaky", "first"));
        messages.add(order("flaky", "second"));
        messages.add(order("flaky", "third"));
        for (int i = 0; i < others; i++) {
            messages.add(order("k" + (i % 6), "o" + i));
        }
        write(store, messages);

        start(store, handlers, fastConfig().ioErrorBackoff(Duration.ofMillis(20)).build());

        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(flakyKey).containsExactly("first", "second", "third");
        assertThat(attemptsSeen).as("attempts recorded before each try").containsExactly(0, 1, 2);
        assertThat(othersDone.getCount()).isZero();
        assertThat(store.parkedRows()).isEmpty();
    }

    @Test
    void aPermanentFailureIsParkedAtOnceAndItsFallbackCalled() {
        InMemoryStore store = new InMemoryStore();
        List<String> handled = new CopyOnWriteArrayList<>();
        List<String> fallbacks = new CopyOnWriteArrayList<>();
        List<ParkedRecord> defaultFallbacks = new CopyOnWriteArrayList<>();
        HandlerMessageBroker handlers = HandlerMessageBroker.builder(TEXT)
                .handler("orders", OrderPlaced.class, (o, r) -> {
                    if (o.order().equals("refused")) {
                        throw new PermanentFailureException("the warehouse does not stock item 42");
                    }
                    handled.add(r.key() + ":" + o.order());
                })
                .fallback("orders", OrderPlaced.class, (o, r, parked) ->
                        fallbacks.add(o.order() + " " + r.id() + " " + parked.reason()))
                .defaultFallback((payload, r, parked) -> defaultFallbacks.add(parked))
                .build();
        write(store, List.of(order("c1", "ok-1"), order("c1", "refused"), order("c1", "ok-2"), order("c2", "ok-3"),
                OutboxMessage.of("nobody-listens", "c3", "lost?")));

        start(store, handlers, fastConfig().build());

        Await.untilOrFail(() -> store.size() == 0 && fallbacks.size() == 1 && defaultFallbacks.size() == 1, WAIT,
                () -> store + ", fallbacks " + fallbacks + ", default " + defaultFallbacks);
        assertThat(handled).as("the key moves on after the park").contains("c1:ok-1", "c1:ok-2", "c2:ok-3");
        assertThat(handled.indexOf("c1:ok-1")).isLessThan(handled.indexOf("c1:ok-2"));
        assertThat(store.parkedRows()).hasSize(2).anySatisfy(p -> {
            assertThat(p.key()).isEqualTo("c1");
            assertThat(p.attempts()).as("parked at its one failed delivery, without a retry").isEqualTo(1);
            assertThat(p.reason()).contains("permanent", "the warehouse does not stock item 42");
        }).anySatisfy(p -> {
            assertThat(p.topic()).isEqualTo("nobody-listens");
            assertThat(p.reason()).contains("no handler", "'nobody-listens'");
        });
        assertThat(fallbacks).singleElement().asString().startsWith("refused ").contains("item 42");
        assertThat(defaultFallbacks).singleElement().satisfies(p -> assertThat(p.topic()).isEqualTo("nobody-listens"));
    }

    @Test
    void whenTheLeaderCrashesMidRunAStandbysHandlersFinishTheWork() {
        InMemoryStore store = new InMemoryStore();
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        int records = 300;
        int keys = 10;
        int beforeCrash = 100;
        DispatcherConfig config = fastConfig().build();
        // The first leader's handlers hang once it handled a third of the records: what is in flight then dies with
        // it (the crash interrupts them).
        List<OutboxRecord> leaderDone = new CopyOnWriteArrayList<>();
        CountDownLatch never = new CountDownLatch(1);
        HandlerMessageBroker leaderHandlers = HandlerMessageBroker.builder(TEXT).name("leader")
                .handler("orders", OrderPlaced.class, (o, r) -> {
                    if (leaderDone.size() >= beforeCrash) {
                        never.await(); // hangs until the crash interrupts it
                    }
                    leaderDone.add(r);
                }).build();
        List<OutboxRecord> standbyDone = new CopyOnWriteArrayList<>();
        HandlerMessageBroker standbyHandlers = HandlerMessageBroker.builder(TEXT).name("standby")
                .handler("orders", OrderPlaced.class, (o, r) -> standbyDone.add(r)).build();
        Dispatcher leader = start(store, leaderHandlers,
                Dispatcher.builder(store, leaderHandlers).config(config).leaderTransport(group.newMember()));
        Await.untilOrFail(leader::isLeader, WAIT, () -> "the first dispatcher never led");
        Dispatcher standby = start(store, standbyHandlers,
                Dispatcher.builder(store, standbyHandlers).config(config).leaderTransport(group.newMember()));
        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < records; i++) {
            messages.add(order("k" + (i % keys), String.format("%04d", i)));
        }
        write(store, messages);
        Await.untilOrFail(() -> leaderDone.size() >= beforeCrash && leader.inFlightRecords() > 0, WAIT,
                () -> "the leader handled " + leaderDone.size());

        // The crash: the leader's session ends and its handlers die mid-run; the standby is assigned the outbox.
        int inFlightAtCrash = leader.inFlightRecords();
        group.loseOwner();
        leaderHandlers.close(Duration.ZERO);
        Await.untilOrFail(() -> !leader.isLeader() && leader.inFlightRecords() == 0, WAIT,
                () -> "the crashed leader still has " + leader.inFlightRecords() + " in flight");
        group.assignNext();

        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(standby.isLeader()).isTrue();
        Set<Long> handled = new HashSet<>();
        leaderDone.forEach(r -> handled.add(r.id()));
        standbyDone.forEach(r -> handled.add(r.id()));
        assertThat(handled).as("every record handled by one or the other").hasSize(records);
        Set<Long> twice = new HashSet<>();
        for (OutboxRecord r : standbyDone) {
            if (leaderDone.stream().anyMatch(l -> l.id() == r.id())) {
                twice.add(r.id());
            }
        }
        assertThat(twice.size()).as("records handled by both: at most those in flight at the crash (%d), never"
                + " more than maxInFlightRecords", inFlightAtCrash).isLessThanOrEqualTo(config.maxInFlightRecords());
        Map<String, List<String>> perKey = new LinkedHashMap<>();
        for (OutboxRecord r : leaderDone) {
            perKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(new String(r.message().value()));
        }
        for (OutboxRecord r : standbyDone) {
            perKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(new String(r.message().value()));
        }
        // Per key, handled in order across the hand-over: a repeat of the latest handled record, never an older one.
        perKey.forEach((key, values) -> {
            for (int i = 1; i < values.size(); i++) {
                assertThat(values.get(i)).as("%s: %s", key, values).isGreaterThanOrEqualTo(values.get(i - 1));
            }
        });
        assertThat(store.parkedRows()).isEmpty();
    }
}
