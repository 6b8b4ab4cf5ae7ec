package dev.outbox.spi;

import java.util.Collection;

/**
 * A {@link MessageBroker} capability ({@link MessageBroker#capability}): the broker hears which of the records it
 * acknowledged the store has since deleted. A broker that publishes exactly once (Kafka's transactional producer with
 * {@code exactlyOnce}) remembers, with each transaction, the records it published that the table may still hold, so
 * that a new leader does not publish them again; this is how it forgets them once they are gone from the table.
 *
 * <p>The dispatcher calls {@link #purged} on its settle thread, after the store committed the purge (never before:
 * a record the broker forgot too early could be published twice), with the ids of records this broker acknowledged.
 * Implementations must be thread-safe and quick: the call must not block on the broker.
 */
@FunctionalInterface
public interface PurgeListener {

    /**
     * The store committed the deletion of these rows, each of them acknowledged by this broker.
     *
     * @param ids the rows' ids ({@link dev.outbox.OutboxRecord#id()}); not null, not empty
     */
    void purged(Collection<Long> ids);
}
