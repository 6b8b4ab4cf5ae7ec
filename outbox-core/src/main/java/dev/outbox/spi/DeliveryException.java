package dev.outbox.spi;

import dev.outbox.OutboxException;

import java.util.Objects;

/**
 * Completes a {@link MessageBroker#send} exceptionally, saying whose fault the failure is ({@link Kind}):
 * <ul>
 *   <li><b>permanent</b>: the record will fail again however often it is retried (too large, unknown or illegal
 *       topic, not authorized): the dispatcher parks it at once;</li>
 *   <li><b>retriable</b>: this record failed and may succeed later: it is retried after a backoff that grows with
 *       its attempts, and parked after {@code maxAttempts} failures. An exception that is not a
 *       {@code DeliveryException} counts as retriable;</li>
 *   <li><b>outage</b>: the broker (or the topic, or the connection to it) is unavailable for every record, not
 *       for this one: the record is retried, with a backoff shared by every key, for as long as the outage lasts;
 *       an outage never counts towards a record's attempts and never parks it, so that an infrastructure failure
 *       cannot park live records while later records of their keys flow once it is over.</li>
 * </ul>
 */
public class DeliveryException extends OutboxException {
    private static final long serialVersionUID = 1L;

    /** Whose fault a failed delivery is; see the class comment. */
    public enum Kind {
        /** This record failed; it may succeed when tried again. Counts towards its attempts. */
        RETRIABLE,
        /** This record can never succeed. Parked at once. */
        PERMANENT,
        /** The broker is unavailable for every record. Retried for as long as it lasts, never counted. */
        OUTAGE,
        /** This sender was fenced out by a successor: no verdict on the record; the dispatcher stands down. */
        FENCED
    }

    /** Whose fault the failure is; never null. */
    private final Kind kind;

    /**
     * A permanent or retriable failure.
     *
     * @param message   what failed, for logs and the parked row's reason
     * @param cause     the broker client's exception, or null
     * @param permanent true for {@link Kind#PERMANENT}, false for {@link Kind#RETRIABLE}
     */
    public DeliveryException(String message, Throwable cause, boolean permanent) {
        this(message, cause, permanent ? Kind.PERMANENT : Kind.RETRIABLE);
    }

    /**
     * A failure of the given kind.
     *
     * @param message what failed, for logs and the parked row's reason
     * @param cause   the broker client's exception, or null
     * @param kind    whose fault the failure is; not null
     * @throws NullPointerException if {@code kind} is null
     */
    public DeliveryException(String message, Throwable cause, Kind kind) {
        super(message, cause);
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    /**
     * A failure of this record that may succeed when tried again.
     *
     * @param message what failed
     * @param cause   the broker client's exception, or null
     * @return a new {@link Kind#RETRIABLE} exception
     */
    public static DeliveryException retriable(String message, Throwable cause) {
        return new DeliveryException(message, cause, Kind.RETRIABLE);
    }

    /**
     * A failure that can never succeed for this record.
     *
     * @param message what failed
     * @param cause   the broker client's exception, or null
     * @return a new {@link Kind#PERMANENT} exception
     */
    public static DeliveryException permanent(String message, Throwable cause) {
        return new DeliveryException(message, cause, Kind.PERMANENT);
    }

    /**
     * A failure of the broker for every record, not of this one: broker, topic or connection unavailable.
     *
     * @param message what failed
     * @param cause   the broker client's exception, or null
     * @return a new {@link Kind#OUTAGE} exception
     */
    public static DeliveryException outage(String message, Throwable cause) {
        return new DeliveryException(message, cause, Kind.OUTAGE);
    }

    /**
     * This sender was fenced out by a successor (see {@link Kind#FENCED}): the record was not published by it and
     * never will be.
     *
     * @param message what failed
     * @param cause   the broker client's exception, or null
     * @return a new {@link Kind#FENCED} exception
     */
    public static DeliveryException fenced(String message, Throwable cause) {
        return new DeliveryException(message, cause, Kind.FENCED);
    }

    /**
     * Whose fault the failure is.
     *
     * @return the kind; never null
     */
    public Kind kind() {
        return kind;
    }

    /**
     * Whether the record can never succeed (see {@link Kind#PERMANENT}).
     *
     * @return true for {@link Kind#PERMANENT} only
     */
    public boolean isPermanent() {
        return kind == Kind.PERMANENT;
    }

    /**
     * Whether the broker was unavailable for every record (see {@link Kind#OUTAGE}).
     *
     * @return true for {@link Kind#OUTAGE} only
     */
    public boolean isOutage() {
        return kind == Kind.OUTAGE;
    }

    /**
     * Whether this sender was fenced out by a successor (see {@link Kind#FENCED}).
     *
     * @return true for {@link Kind#FENCED} only
     */

    public boolean isFenced() {
        return kind == Kind.FENCED;
    }
}
