package dev.outbox.sidecar;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Inbox;
import dev.outbox.spring.OutboxProperties;
import dev.outbox.store.sql.SqlInbox;

import java.util.List;
import java.util.Objects;

/**
 * One inbox whose failed messages the sidecar shows, read-only: its pool, the inbox over it, and the consumers the
 * configuration names (none: every consumer with failed messages). Thread-safe.
 */
public final class SidecarInbox {
    private final String name;
    private final HikariDataSource pool;
    private final SqlInbox inbox;
    private final OutboxProperties.StoreType type;
    private final List<String> consumers;

    SidecarInbox(String name, HikariDataSource pool, SqlInbox inbox, OutboxProperties.StoreType type,
                 List<String> consumers) {
        this.name = Objects.requireNonNull(name, "name");
        this.pool = Objects.requireNonNull(pool, "pool");
        this.inbox = Objects.requireNonNull(inbox, "inbox");
        this.type = Objects.requireNonNull(type, "type");
        this.consumers = List.copyOf(consumers);
    }

    /**
     * The inbox's name in the configuration file.
     *
     * @return its key under {@code sidecar.inboxes}, as it appears in the API's and the console's URLs
     */
    public String name() {
        return name;
    }

    /**
     * The inbox, for its reads of failed messages.
     *
     * @return the {@code PostgresInbox} or {@code MySqlInbox} over the inbox's pool; the sidecar only reads with it
     */
    public Inbox inbox() {
        return inbox;
    }

    /**
     * Which database it is on.
     *
     * @return {@code POSTGRES}, or {@code MYSQL} (MariaDB included): as configured, else as detected at start-up
     */
    public OutboxProperties.StoreType type() {
        return type;
    }

    /**
     * The failed-messages table as it appears in SQL.
     *
     * @return the table's name, qualified by its schema when one is configured ({@code <table>_failed})
     */
    public String failedTable() {
        return inbox.failedTable();
    }

    /**
     * The consumers the configuration names ({@code sidecar.inboxes.<name>.consumers}).
     *
     * @return the consumers, in the configuration's order, unmodifiable; empty when every consumer with failed
     *         messages is shown
     */
    public List<String> configuredConsumers() {
        return consumers;
    }

    void closePool() {
        pool.close();
    }
}
