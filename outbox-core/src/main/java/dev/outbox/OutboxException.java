package dev.outbox;

/**
 * Root of every exception the outbox throws. Adapters translate driver and client exceptions
 * ({@code SQLException}, Jdbi, Kafka) into a subclass, keeping the original as the cause.
 *
 * <p>Unchecked, like {@link IllegalArgumentException}: an application rarely recovers from an outbox failure
 * other than by rolling back its transaction, which the exception propagating already does.
 */
public class OutboxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An outbox failure without a cause.
     *
     * @param message what failed
     */
    public OutboxException(String message) {
        super(message);
    }

    /**
     * An outbox failure caused by {@code cause}.
     *
     * @param message what failed
     * @param cause   the underlying exception, or null
     */
    public OutboxException(String message, Throwable cause) {

        super(message, cause);
    }
}
