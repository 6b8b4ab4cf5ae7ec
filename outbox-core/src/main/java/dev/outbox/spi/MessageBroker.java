package dev.outbox.spi;

import dev.outbox.OutboxRecord;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * Where records are published. An implementation adapts one broker and is proven by running
 * {@code dev.outbox.testkit.MessageBrokerContract} against it.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>Thread-safe: {@link #send} is called from the dispatcher's mark thread while completions arrive on
 *       the broker's own threads, and {@link #close} may be called from any thread.</li>
 *   <li>{@link #send} is asynchronous: it may block briefly for back-pressure that concerns every record alike (a
 *       full buffer) but never waits for the acknowledgement, and never on what one record needs: a topic's
 *       metadata, whether a topic exists, a connection to one destination. Such a record waits (or fails) off the
 *       caller's thread, because the dispatcher sends every key's records from one thread and a wait there would
 *       hold up every key (G6); {@code MessageBrokerContract} checks it with a topic the broker must wait for. The returned stage completes normally once the broker has durably accepted
 *       the record (for Kafka: acknowledged by all in-sync replicas), and exceptionally otherwise — with a
 *       {@link DeliveryException} saying whether the failure is permanent.</li>
 *   <li>The record is published with its key, value (null stays null: a tombstone) and headers in order.</li>
 *   <li>Every send completes, successfully or not, within a bound the implementation documents (for Kafka:
 *       {@code delivery.timeout.ms}). A record whose stage failed is never delivered later: once the stage
 *       has failed, the broker has given up on it.</li>
 *   <li>The dispatcher never has two records of one key in flight at once, so the broker need not order
 *       concurrent sends.</li>
 * </ul>
 */
public interface MessageBroker extends AutoCloseable {

    /**
     * Starts publishing {@code record}.
     *
     * @param record the record to publish; not null
     * @return a stage completing when the broker acknowledged the record, or exceptionally with the reason
     *         it was not; never null. A send that fails immediately (for example, a rejected topic name) may
     *         throw or return an already failed stage; both are treated alike.
     */
    CompletionStage<Void> send(OutboxRecord record);

    /**
     * Waits, at most {@code timeout}, until every record sent so far has completed.
     *
     * @param timeout the longest wait
     * @return whether all of them completed within the timeout
     */
    boolean flush(Duration timeout);

    /**
     * Asks the broker to send the records it holds back now, without waiting for more to fill a batch (Kafka's
     * {@code linger.ms}): the dispatcher calls it when it has sent what it read, had nothing else in flight and
     * expects nothing more soon (its last read was not full), so that an idle outbox's record does not wait for a
     * batch that will not fill, while a busy one keeps batching. Must not wait for the records; cheap enough to be called after every
     * batch of sends. The default does nothing.
     */
    default void sendPending() {
    }

    /**
     * The broker shard {@code shard} of a sharded outbox sends through ({@code Dispatcher} calls it once per shard,
     * and closes what it returns when the shard's dispatcher closes). By default this broker, shared: closing the
     * returned broker only flushes ({@link SharedMessageBroker}). A broker whose sends belong to one sender at a time
     * (Kafka's transactional producer: one transactional id per shard, so that one shard's new leader fences only
     * that shard's old one) returns a broker of its own per shard, closed with the shard or with this broker.
     *
     * @param shard the shard's index, from 0
     * @return the broker the shard's harvest sends through; this broker's default wraps it so that closing the
     *         result only flushes
     */
    default MessageBroker forShard(int shard) {
        return new SharedMessageBroker(this);
    }

    /**
     * Flushes for at most {@code timeout}, then releases the broker's resources and threads. Records still
     * pending when the timeout expires are failed (their stages complete exceptionally) and are never
     * delivered afterwards. Idempotent.
     *
     * @param timeout the longest wait for pending records
     */
    void close(Duration timeout);


    /**
     * This broker's {@code type} capability, if it has it (for example {@link PurgeListener}): by default this broker
     * itself when it implements {@code type}, else empty. A broker whose abilities depend on its configuration
     * overrides it; a wrapper forwards it to what it wraps for the capabilities it does not change.
     *
     * @param type the capability's interface
     * @param <T>  the capability's type
     * @return the capability, or empty if this broker does not have it
     */
    default <T> Optional<T> capability(Class<T> type) {
        return type.isInstance(this) ? Optional.of(type.cast(this)) : Optional.empty();
    }

    /** Closes with a default bound chosen by the implementation. */
    @Override
    default void close() {
        close(Duration.ofSeconds(30));
    }
}
