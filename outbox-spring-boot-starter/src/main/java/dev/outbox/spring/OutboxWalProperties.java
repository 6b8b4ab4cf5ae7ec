package dev.outbox.spring;

import java.time.Duration;

/**
 * The Postgres WAL harvest ({@code WalHarvest}): off unless {@code url} is set. Messages are emitted into the
 * write-ahead log and streamed from a logical replication slot; see the README's "Choosing a harvest".
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

    public String getUrl() {
        return url;
    }

    public void setUrl(String url) {
        this.url = url;
    }

    public String getUsername() {
        return username;
    }

    public void setUsername(String username) {
        this.username = username;
    }

    public String getPassword() {
        return password;
    }

    public void setPassword(String password) {
        this.password = password;
    }

    public String getSlot() {
        return slot;
    }

    public void setSlot(String slot) {
        this.slot = slot;
    }

    public String getPublication() {
        return publication;
    }

    public void setPublication(String publication) {
        this.publication = publication;
    }

    public Duration getTakeoverTimeout() {
        return takeoverTimeout;
    }

    public void setTakeoverTimeout(Duration takeoverTimeout) {
        this.takeoverTimeout = takeoverTimeout;
    }
}
