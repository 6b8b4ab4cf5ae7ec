package dev.outbox.testkit;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.Store;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Bugs planted in the delivery options' store for {@link DispatcherOptionsFaultInjectionTest}, to prove that its
 * checks find them: each names the check that must fail ({@link #caughtBy()}). {@link #NONE} is the store as it is.
 */
enum PlantedOptionsBug {
    /** No bug. */
    NONE(null),
    /**
     * The release reads a clock 150 ms ahead of the store's (as a release on the application's clock would, where the
     * database's lags): more than the longest delay, so a message written while a leader leads is released at once.
     */
    EARLY_RELEASE("not before:"),
    /** A message without a time or an idempotency key goes straight into the outbox, even if its key is held. */
    DROPPED_HOLD("G2:"),
    /** The publisher loses the messages' idempotency keys on the way to the store. */
    IGNORED_IDEMPOTENCY("idempotency:"),
    /** The publisher loses one in 50 of the plain messages it is handed (no time, no idempotency key). */
    LOST_MESSAGE("G1:");

    private static final Duration EARLY = Duration.ofMillis(150);
    private final String caughtBy;

    PlantedOptionsBug(String caughtBy) {
        this.caughtBy = caughtBy;
    }

    /** The words of the check that finds this bug: its assertion's description contains them. */
    String caughtBy() {
        return caughtBy;
    }

    /** The clock the store with the options is built with. */
    Clock storeClock(Clock clock) {
        if (this != EARLY_RELEASE) {
            return clock;
        }
        return new Clock() {
            @Override
            public ZoneId getZone() {
                return clock.getZone();
            }

            @Override
            public Clock withZone(ZoneId zone) {
                throw new UnsupportedOperationException("withZone");
            }

            @Override
            public Instant instant() {
                boolean releasing = Thread.currentThread().getName().endsWith("-housekeeping");
                return releasing ? clock.instant().plus(EARLY) : clock.instant();
            }
        };
    }

    /** The store the dispatchers and writers use: {@code options} itself, or a variant with this bug. */
    Store wrap(InMemoryDeliveryOptions options) {
        return switch (this) {
            case NONE, EARLY_RELEASE -> options;
            case DROPPED_HOLD -> new Variant(options, (connection, messages) -> {
                List<OutboxMessage> direct = new ArrayList<>();
                List<OutboxMessage> rest = new ArrayList<>();
                for (OutboxMessage m : messages) {
                    (m.isDelayed() || m.idempotencyKey() != null ? rest : direct).add(m);
                }
                if (!rest.isEmpty()) {
                    options.publisher().publish(connection, rest); // first: a refused call writes nothing
                }
                if (!direct.isEmpty()) {
                    options.store().publisher().publish(connection, direct);
                }
            });
            case IGNORED_IDEMPOTENCY -> new Variant(options, (connection, messages) ->
                    options.publisher().publish(connection, messages.stream().map(PlantedOptionsBug::withoutKey)
                            .toList()));
            case LOST_MESSAGE -> {
                AtomicInteger plain = new AtomicInteger();
                yield new Variant(options, (connection, messages) -> options.publisher().publish(connection,
                        messages.stream().filter(m -> m.isDelayed() || m.idempotencyKey() != null
                                || plain.incrementAndGet() % 50 != 0).toList()));
            }
        };
    }

    private static OutboxMessage withoutKey(OutboxMessage m) {
        OutboxMessage.Builder b = OutboxMessage.builder(m.topic(), m.key()).value(m.value());
        for (Header h : m.headers()) {
            b.header(h.name(), h.value());
        }
        if (m.deliverAt() != null) {
            b.deliverAt(m.deliverAt());
        }
        if (m.deliverAfter() != null) {
            b.deliverAfter(m.deliverAfter());
        }
        return b.build();
    }

    /** The options' store with another publisher. */
    private record Variant(InMemoryDeliveryOptions options, Publisher publisher) implements Store {
        @Override
        public void purge(Collection<Long> ids) {
            options.purge(ids);
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
            options.retryLater(nextAttempts);
        }

        @Override
        public void park(Map<Long, String> reasons) {
            options.park(reasons);
        }

        @Override
        public <T> Optional<T> capability(Class<T> type) {
            return options.capability(type);
        }
    }
}
