package dev.outbox.handlers;

import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.DeliveryException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Calls the fallback of each record the dispatcher parks. The dispatcher reports a failed delivery with its record
 * ({@code DispatcherObserver.failed}) before it reports the park ({@code parked}, once the park committed), which
 * carries only the row's id, topic, key and reason: the record is remembered between the two, so the fallback gets
 * its payload. A record is forgotten when it is sent again, acknowledged, or when this instance stops leading.
 * Thread-safe.
 */
final class ParkedFallbacks {
    private static final Logger log = LoggerFactory.getLogger(ParkedFallbacks.class);

    private final String name;
    private final HandlerRoutes routes;
    private final HandlerExecutor executor;
    private final Map<Long, OutboxRecord> failed = new ConcurrentHashMap<>();

    ParkedFallbacks(String name, HandlerRoutes routes, HandlerExecutor executor) {
        this.name = name;
        this.routes = routes;
        this.executor = executor;
    }

    void failed(OutboxRecord record) {
        failed.put(record.id(), record);
    }

    void forget(OutboxRecord record) {
        failed.remove(record.id());
    }

    void statusChanged(DispatcherHealth.Status status) {
        if (status != DispatcherHealth.Status.LEADER) {
            failed.clear();
        }
    }

    /** Runs the parked record's fallback, if it has one, on a handler thread. */
    void parked(ParkedRecord parked) {
        OutboxRecord record = failed.remove(parked.id());
        HandlerRoutes.Route<FallbackHandler<Object>> route = routes.fallback(record, parked);
        if (route == null) {
            return;
        }
        if (!executor.execute(() -> run(route, record, parked))) {
            log.error("{}: the fallback ({}) of parked record {} (topic {}) was not called: the handlers are closed"
                    + " or their queue is full", name, route.name(), parked.id(), parked.topic());
        }
    }

    private void run(HandlerRoutes.Route<FallbackHandler<Object>> route, OutboxRecord record, ParkedRecord parked) {
        Object payload = null;
        if (record != null) {
            try {
                payload = routes.decode(record, route.type());
            } catch (DeliveryException e) {
                log.debug("{}: parked record {} is passed to its fallback without a payload: {}", name, parked.id(),
                        e.getMessage());
            }
        }
        try {
            route.target().parked(payload, record, parked);
        } catch (Exception | Error e) {
            log.error("{}: the fallback ({}) of parked record {} (topic {}) failed; the record stays parked", name,
                    route.name(), parked.id(), parked.topic(), e);
            if (e instanceof Error error) {
                throw error;
            }
        }
    }
}
