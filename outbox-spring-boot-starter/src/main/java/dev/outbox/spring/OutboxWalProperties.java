package dev.outbox.spring;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Postgres WAL harvest ({@code WalHarvest}): off unless {@code url} is set. Messages are emitted into the
 * write-ahead log and streamed from a logical replication slot; see the README's "Choosing a harvest". The
 * {@code wal.*} properties of the store's settings: {@code outbox.store.wal.*} in the starter (the sidecar's
 * {@code sidecar.outboxes.<name>.store.wal.*}). Not with more than one shard.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxWalProperties {
    /** JDBC URL of the outbox's database for replication connections (no password in it); unset: table harvest. */
    private String url;
    /** User of the replication connections; needs the REPLICATION attribute. */
    private String username;
    /** Password of the replication connections; never logged. */
    private String password;
    /** Replication slot; default "<database>_[<schema>_]<table>_slot". */
    private String slot;
    /** Publication; default "<table>_publication". */
    private String publication;
    /** How long a new leader waits for a deposed one to release the slot before terminating its backend. */
    private Duration takeoverTimeout = Duration.ofSeconds(30);
    /** How often the stream reports its confirmed position to the server, 10 ms to 1 h. */
    private Duration statusInterval = Duration.ofMillis(250);
    /** The longest a harvest read waits for a message before the engine looks around; at most 1 s. */
    private Duration readWait = Duration.ofMillis(100);
    /** The most messages read from the server and not yet taken by the engine. */
    private int maxBuffered = 10_000;
    /** Other Postgres JDBC driver properties of the replication connections (ssl, sslmode, ...). */
    private Map<String, String> properties = new LinkedHashMap<>();

    /**
     * {@return the JDBC URL of replication connections to the outbox's database, or {@code null} (the default) to
     * harvest the table} Bound from the {@code wal.url} property.
     */
    public String getUrl() {
        return url;
    }

    /**
     * Sets the {@code wal.url} property.
     *
     * @param url a {@code jdbc:postgresql://} URL without a password in it, or {@code null}; checked at start-up
     */
    public void setUrl(String url) {
        this.url = url;
    }

    /**
     * {@return the user of the replication connections, or {@code null} to set none (the driver's own default then
     * applies)} Bound from the {@code wal.username} property.
     */
    public String getUsername() {
        return username;
    }

    /**
     * Sets the {@code wal.username} property.
     *
     * @param username a role with the REPLICATION attribute, or {@code null}
     */
    public void setUsername(String username) {
        this.username = username;
    }

    /**
     * {@return the password of the replication connections, or {@code null} for none; never logged} Bound from the
     * {@code wal.password} property.
     */
    public String getPassword() {
        return password;
    }

    /**
     * Sets the {@code wal.password} property.
     *
     * @param password the password, or {@code null}
     */
    public void setPassword(String password) {
        this.password = password;
    }

    /**
     * {@return the logical replication slot, or {@code null} (the default) for
     * {@code <database>_[<schema>_]<table>_slot}} Bound from the {@code wal.slot} property.
     */
    public String getSlot() {
        return slot;
    }

    /**
     * Sets the {@code wal.slot} property.
     *
     * @param slot a slot name Postgres accepts, or {@code null}; checked at start-up
     */
    public void setSlot(String slot) {
        this.slot = slot;
    }

    /**
     * {@return the publication, or {@code null} (the default) for {@code <table>_publication}} Bound from the
     * {@code wal.publication} property.
     */
    public String getPublication() {
        return publication;
    }

    /**
     * Sets the {@code wal.publication} property.
     *
     * @param publication a publication name Postgres accepts, or {@code null}; checked at start-up
     */
    public void setPublication(String publication) {
        this.publication = publication;
    }

    /**
     * {@return how long a new leader waits for a deposed one to release the slot before it terminates that backend; 30
     * seconds by default} Bound from the {@code wal.takeover-timeout} property.
     */
    public Duration getTakeoverTimeout() {
        return takeoverTimeout;
    }

    /**
     * Sets the {@code wal.takeover-timeout} property.
     *
     * @param takeoverTimeout a positive duration; checked at start-up
     */
    public void setTakeoverTimeout(Duration takeoverTimeout) {
        this.takeoverTimeout = takeoverTimeout;
    }

    /**
     * {@return how often the stream reports its confirmed position to the server; 250 ms by default} Bound from the
     * {@code wal.status-interval} property.
     */
    public Duration getStatusInterval() {
        return statusInterval;
    }

    /**
     * Sets the {@code wal.status-interval} property.
     *
     * @param statusInterval 10 ms to 1 h; checked at start-up (the range when a leader opens the stream)
     */
    public void setStatusInterval(Duration statusInterval) {
        this.statusInterval = statusInterval;
    }

    /**
     * {@return the longest a harvest read waits for a message before the engine looks around; 100 ms by default}
     * Bound from the {@code wal.read-wait} property.
     */
    public Duration getReadWait() {
        return readWait;
    }

    /**
     * Sets the {@code wal.read-wait} property.
     *
     * @param readWait positive, at most 1 s; checked at start-up
     */
    public void setReadWait(Duration readWait) {
        this.readWait = readWait;
    }

    /**
     * {@return the most messages read from the server and not yet taken by the engine; 10,000 by default} Bound from
     * the {@code wal.max-buffered} property.
     */
    public int getMaxBuffered() {
        return maxBuffered;
    }

    /**
     * Sets the {@code wal.max-buffered} property.
     *
     * @param maxBuffered at least 1; checked at start-up
     */
    public void setMaxBuffered(int maxBuffered) {
        this.maxBuffered = maxBuffered;
    }

    /**
     * {@return other driver properties of the replication connections, by the Postgres JDBC driver's names; empty by
     * default, never {@code null}} Bound from the {@code wal.properties.*} properties.
     */
    public Map<String, String> getProperties() {
        return properties;
    }

    /**
     * Sets the {@code wal.properties.*} properties.
     *
     * @param properties driver properties such as {@code ssl} or {@code sslmode}; not {@code null}
     */
    public void setProperties(Map<String, String> properties) {
        this.properties = properties;
    }
}
