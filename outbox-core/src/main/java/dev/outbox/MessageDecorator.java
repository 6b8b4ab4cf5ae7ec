package dev.outbox;

/**
 * Transforms every message on its way into the outbox (sbmt-outbox's "middleware"): adds or changes headers —
 * a trace context, a tenant, a schema version — or rejects a message the application must not write. The
 * {@link Publisher}s of the SQL stores apply their decorators, in the order they were added to the store's
 * builder, to every message before anything is written; configure them with {@code decorator(…)} on
 * {@code PostgresStore.Builder} or {@code MySqlStore.Builder}.
 *
 * <p>A decorator runs on the writer's thread, inside the writer's transaction, so it sees the writer's context
 * (a current span, a thread-local tenant). It must be thread-safe and should be fast: it runs once per message.
 *
 * <p>To reject a message, throw: the publisher then writes none of the messages of that call and throws a
 * {@link MessageRejectedException} naming the message and the decorator, with the thrown exception as its cause;
 * the writer's transaction should be rolled back.
 */
@FunctionalInterface
public interface MessageDecorator {

    /**
     * Returns the message to write in place of {@code message}: the same instance, or a new one built with
     * {@link OutboxMessage#withHeaders} and friends. Must not return null.
     *
     * @param message the message as the application gave it, or as the previous decorator returned it; not null
     * @return the message to write; not null
     * @throws RuntimeException to reject the message

     */
    OutboxMessage decorate(OutboxMessage message);
}
