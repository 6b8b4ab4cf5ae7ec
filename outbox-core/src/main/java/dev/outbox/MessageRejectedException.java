package dev.outbox;

/**
 * A {@link MessageDecorator} rejected a message, or returned none: nothing of the publish call that carried it
 * was written. The message names the message (index, topic, key) and the decorator; the decorator's own
 * exception, if it threw one, is the cause. The writer's transaction should be rolled back.
 */
public final class MessageRejectedException extends OutboxException {
    private static final long serialVersionUID = 1L;

    /**
     * A message rejected by a decorator.
     *
     * @param message names the message (index, topic, key) and the decorator
     * @param cause   the decorator's exception, or null if it returned null
     */
    public MessageRejectedException(String message, Throwable cause) {

        super(message, cause);
    }
}
