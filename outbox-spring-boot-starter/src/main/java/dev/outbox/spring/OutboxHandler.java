package dev.outbox.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a bean method as the in-process handler of the outbox records of one topic, or of one type (the value of the
 * records' {@code type} header, {@code outbox.handlers.type-header}), used when {@code outbox.broker=handlers}:
 *
 * <pre>{@code
 * @OutboxHandler(topic = "order-events")
 * void confirm(OrderPlaced order) {             // the payload's type is the parameter's: JSON read by Jackson
 *     mailer.sendConfirmation(order);
 * }
 * }</pre>
 *
 * <p>The method takes the payload (any type the application's {@code PayloadSerializer} reads; {@code byte[]} for
 * the value as it is) and, if it wants it, the {@link dev.outbox.OutboxRecord} (key, headers, message id, attempts),
 * in either order. Returning acknowledges the record; throwing
 * {@link dev.outbox.handlers.PermanentFailureException} parks it at once; any other exception is retried with the
 * dispatcher's backoff, holding only the record's key, and parks it after {@code outbox.dispatcher.max-attempts}.
 * Only the leader runs handlers, one record per key at a time, in order. <b>Handlers must be idempotent</b>: a
 * crash or a change of leader repeats the records in flight (see {@link dev.outbox.handlers.MessageHandler}). A
 * {@code @Transactional} handler runs in a transaction of its own, not the writer's: the writer's has committed.
 *
 * <p>Set exactly one of {@link #topic()} and {@link #type()}; a topic or type has one handler at most.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface OutboxHandler {

    /**
     * The topic whose records this method handles.
     *
     * @return the topic, or empty when {@link #type()} is set
     */
    String topic() default "";

    /**
     * The type header value whose records this method handles, whatever their topic (it wins over a topic's
     * handler).
     *
     * @return the type, or empty when {@link #topic()} is set
     */
    String type() default "";
}
