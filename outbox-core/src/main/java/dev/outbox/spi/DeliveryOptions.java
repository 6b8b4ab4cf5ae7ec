package dev.outbox.spi;

import dev.outbox.OutboxMessage;

import java.util.List;

/**
 * The check every {@link dev.outbox.Publisher} runs before it writes: a message asking for a delivery option
 * ({@linkplain OutboxMessage#isDelayed() not before}, an {@linkplain OutboxMessage#idempotencyKey() idempotency key})
 * that this store was not built to carry out is refused, naming the message and the option, so that an option is
 * never silently ignored (a delayed message sent at once, a duplicate written twice).
 */
public final class DeliveryOptions {
    private DeliveryOptions() {
    }

    /**
     * Refuses the first message of {@code messages} that asks for an option the store cannot carry out.
     *
     * @param messages    the messages of a publish call
     * @param scheduling  whether the store carries out "not before" ({@link ScheduledMessages})
     * @param idempotency whether the store carries out idempotency keys ({@link IdempotencyKeys})
     * @param store       how to name the store and how to turn the option on, for the error: for example
     *                    {@code "this SqlStore (built without scheduling(true) / idempotencyKeys(...))"}
     * @throws IllegalArgumentException naming the message (index, topic, key) and the option
     */
    public static void check(List<OutboxMessage> messages, boolean scheduling, boolean idempotency, String store) {
        if (scheduling && idempotency) {
            return;
        }
        for (int i = 0; i < messages.size(); i++) {
            OutboxMessage m = messages.get(i);
            if (m == null) {
                continue; // the publisher's own null check names it
            }
            if (!scheduling && m.isDelayed()) {
                throw new IllegalArgumentException("message " + i + " (topic '" + m.topic() + "', key '" + m.key()
                        + "') asks not to be sent before " + (m.deliverAt() != null ? m.deliverAt() : "a delay of "
                        + m.deliverAfter()) + ", and " + store + " cannot schedule messages");
            }
            if (!idempotency && m.idempotencyKey() != null) {
                throw new IllegalArgumentException("message " + i + " (topic '" + m.topic() + "', key '" + m.key()
                        + "') has the idempotency key '" + m.idempotencyKey() + "', and " + store
                        + " does not keep idempotency keys");
            }
        }
    }
}
