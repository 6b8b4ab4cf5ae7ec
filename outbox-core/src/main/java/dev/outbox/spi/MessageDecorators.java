package dev.outbox.spi;

import dev.outbox.MessageDecorator;
import dev.outbox.MessageRejectedException;
import dev.outbox.OutboxMessage;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The {@link MessageDecorator}s of a store, applied in order by its publisher to every message before anything
 * is written. For store implementations: a store's builder collects the decorators, its publisher calls
 * {@link #apply(List)} first thing in {@code publish}.
 *
 * <p>Immutable and thread-safe (as long as the decorators are).
 */
public final class MessageDecorators {
    private static final MessageDecorators NONE = new MessageDecorators(List.of());

    private final List<MessageDecorator> decorators;

    private MessageDecorators(List<MessageDecorator> decorators) {
        this.decorators = decorators;
    }

    /**
     * No decorator: {@link #apply} returns its argument.
     *
     * @return the shared empty instance
     */
    public static MessageDecorators none() {
        return NONE;
    }

    /**
     * The given decorators, applied in list order.
     *
     * @param decorators the decorators, copied; not null, no null element
     * @return the decorators; {@link #none()} for an empty list
     * @throws NullPointerException     if {@code decorators} is null
     * @throws IllegalArgumentException naming the position of a null decorator
     */
    public static MessageDecorators of(List<MessageDecorator> decorators) {
        Objects.requireNonNull(decorators, "decorators must not be null");
        for (int i = 0; i < decorators.size(); i++) {
            if (decorators.get(i) == null) {
                throw new IllegalArgumentException("decorator " + i + " is null");
            }
        }
        return decorators.isEmpty() ? NONE : new MessageDecorators(List.copyOf(decorators));
    }

    /**
     * The decorators, in the order they are applied; immutable.
     *
     * @return the decorators; empty for {@link #none()}
     */
    public List<MessageDecorator> decorators() {
        return decorators;
    }

    /**
     * Whether there is no decorator.
     *
     * @return true for {@link #none()}
     */
    public boolean isEmpty() {
        return decorators.isEmpty();
    }

    /**
     * Returns the messages as the decorators transform them, in the same order: {@code messages} itself when
     * there is no decorator. Null messages are passed through untouched, for the publisher's own validation to
     * report.
     *
     * @param messages the messages as the application gave them
     * @return the decorated messages, in the same order; {@code messages} itself if there is no decorator
     * @throws MessageRejectedException if a decorator throws or returns null, naming the message's index, topic

     *                                  and key and the decorator's class
     */
    public List<OutboxMessage> apply(List<OutboxMessage> messages) {
        if (decorators.isEmpty()) {
            return messages;
        }
        List<OutboxMessage> out = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            OutboxMessage m = messages.get(i);
            if (m != null) {
                for (MessageDecorator d : decorators) {
                    m = decorate(d, i, m);
                }
            }
            out.add(m);
        }
        return out;
    }

    private static OutboxMessage decorate(MessageDecorator d, int index, OutboxMessage m) {
        OutboxMessage result;
        try {
            result = d.decorate(m);
        } catch (RuntimeException e) {
            throw new MessageRejectedException(describe(index, m) + " was rejected by decorator "
                    + d.getClass().getName() + ": " + e, e);
        }
        if (result == null) {
            throw new MessageRejectedException(describe(index, m) + ": decorator " + d.getClass().getName()
                    + " returned null", null);
        }
        return result;
    }

    private static String describe(int index, OutboxMessage m) {
        return "message " + index + " (topic '" + m.topic() + "', key '" + Excerpt.of(m.key()) + "')";
    }

    @Override
    public String toString() {
        return "MessageDecorators" + decorators;
    }
}
