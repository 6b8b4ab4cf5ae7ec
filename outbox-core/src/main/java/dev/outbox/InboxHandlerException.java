package dev.outbox;

/**
 * A handler run by {@link Inbox#process} threw; the cause is what it threw. The caller must roll back its
 * transaction, which also undoes the inbox record, so the message counts as not processed.
 */
public class InboxHandlerException extends OutboxException {
    private static final long serialVersionUID = 1L;

    /**
     * A handler's failure.
     *
     * @param message names the consumer and the message id
     * @param cause   what the handler threw
     */
    public InboxHandlerException(String message, Throwable cause) {

        super(message, cause);
    }
}
