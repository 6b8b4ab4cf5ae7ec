package dev.outbox.spring;

import dev.outbox.OutboxException;

/**
 * A property the outbox starter needs is missing or has a bad value; start-up stops, and
 * {@link OutboxFailureAnalyzer} reports the {@link #property()} and what to do.
 */
public final class OutboxConfigurationException extends OutboxException {
    private static final long serialVersionUID = 1L;

    private final String property;
    private final String action;

    /**
     * @param property the property to fix, e.g. {@code spring.kafka.producer.acks}
     * @param problem  what is wrong with it, naming the bad value (never a secret)
     * @param action   what to do about it
     */
    public OutboxConfigurationException(String property, String problem, String action, Throwable cause) {
        super("Outbox configuration property '" + property + "': " + problem, cause);
        this.property = property;
        this.action = action;
    }

    /** The property to fix. */
    public String property() {
        return property;
    }

    /** What to do about it. */
    public String action() {
        return action;
    }
}
