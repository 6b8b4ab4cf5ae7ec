package dev.outbox.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a bean method to be called when an outbox record of one topic (or type) is parked by the in-process
 * handlers ({@code outbox.broker=handlers}): its {@link OutboxHandler} failed {@code max-attempts} times, failed
 * permanently, or there was none. With neither {@link #topic()} nor {@link #type()}, it is the fallback of every
 * record without one of its own.
 *
 * <pre>{@code
 * @OutboxFallbackHandler(topic = "order-events")
 * void confirmationFailed(OrderPlaced order, ParkedRecord parked) {
 *     support.open("no confirmation sent for order " + order.id() + ": " + parked.reason());
 * }
 * }</pre>
 *
 * <p>Parameters, in any order, each optional: the payload (null if it could not be read, which may be why it was
 * parked), the {@link dev.outbox.ParkedRecord} (id, key, attempts, reason) and the {@link dev.outbox.OutboxRecord}
 * (null for a row never tried in this process). Called once per park, after the park committed, on the leader; an
 * exception is logged and not retried (see {@link dev.outbox.handlers.FallbackHandler}). The parked row stays where
 * an operator replays or discards it.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface OutboxFallbackHandler {

    /**
     * The topic whose parked records this method is called for.
     *
     * @return the topic, or empty
     */
    String topic() default "";

    /**
     * The type header value whose parked records this method is called for.
     *
     * @return the type, or empty
     */
    String type() default "";
}
