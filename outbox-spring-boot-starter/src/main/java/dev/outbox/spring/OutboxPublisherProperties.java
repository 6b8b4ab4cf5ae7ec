package dev.outbox.spring;

/**
 * The {@link OutboxPublisher} bean: the starter's {@code outbox.publisher.*} properties.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxPublisherProperties {
    /**
     * Whether publishing requires an active Spring transaction on the outbox's DataSource (the default). When
     * false, a publish outside a transaction is written and committed on its own.
     */
    private boolean requireTransaction = true;

    /**
     * {@return whether publishing requires an active Spring transaction on the outbox's DataSource; {@code true} by
     * default} Bound from the {@code outbox.publisher.require-transaction} property.
     */
    public boolean isRequireTransaction() {
        return requireTransaction;
    }

    /**
     * Sets the {@code outbox.publisher.require-transaction} property.
     *
     * @param requireTransaction {@code false} to let a publish outside a transaction be written and committed on its
     *                           own
     */
    public void setRequireTransaction(boolean requireTransaction) {
        this.requireTransaction = requireTransaction;
    }
}
