package dev.outbox.spring;


/** The {@link OutboxPublisher} bean. */
public final class OutboxPublisherProperties {
    /**
     * Whether publishing requires an active Spring transaction on the outbox's DataSource (the default). When
     * false, a publish outside a transaction is written and committed on its own.
     */
    private boolean requireTransaction = true;

    public boolean isRequireTransaction() {
        return requireTransaction;
    }

    public void setRequireTransaction(boolean requireTransaction) {
        this.requireTransaction = requireTransaction;
    }
}
