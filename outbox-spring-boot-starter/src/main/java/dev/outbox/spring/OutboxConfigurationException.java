package dev.outbox.spring;

import dev.outbox.OutboxException;

/**
 * A property the outbox starter needs is missing or has a bad value; start-up stops, and
 * {@link OutboxFailureAnalyzer} reports the {@link #property()} and what to do.
 */
public final class OutboxConfigurationException extends OutboxException {
    private static final long serialVersionUID = 1L;

    /** The property to fix, e.g. {@code spring.kafka.producer.acks}. */
    private final String property;
    /** What to do about it, a sentence for the failure analysis. */
    private final String action;

    /**
     * A bad or missing property; the message is {@code Outbox configuration property '<property>': <problem>}.
     *
     * @param property the property to fix, e.g. {@code spring.kafka.producer.acks}
     * @param problem  what is wrong with it, naming the bad value (never a secret)
     * @param action   what to do about it
     * @param cause    the exception that rejected the value (a builder's {@code IllegalArgumentException}, a
     *                 failed database call), or {@code null}
     */
    public OutboxConfigurationException(String property, String problem, String action, Throwable cause) {
        super("Outbox configuration property '" + property + "': " + problem, cause);
        this.property = property;
        this.action = action;
    }

    /**
     * The property to fix.
     *
     * @return its full name in kebab case, e.g. {@code outbox.store.table}, or a prefix when the problem is a
     *         relation between several of its properties
     */
    public String property() {
        return property;
    }

    /**
     * What to do about it.
     *
     * @return the advice {@link OutboxFailureAnalyzer} shows as the action
     */
    public String action() {
        return action;
    }
}
