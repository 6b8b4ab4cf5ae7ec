package dev.outbox.sidecar;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Inbox;
import dev.outbox.spi.StoreException;
import dev.outbox.spring.OutboxProperties.StoreType;
import dev.outbox.store.mysql.MySqlInbox;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.store.sql.SqlInbox;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The inboxes of the configuration ({@code sidecar.inboxes}), whose failed messages the operator API and console
 * show: each built before the Spring context starts (pool connected, database detected, the failed-messages table
 * read once), so that a bad setting stops the sidecar with one line naming it. The sidecar never writes to an inbox.
 * Thread-safe.
 */
public final class Inboxes implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Inboxes.class);

    private final Map<String, SidecarInbox> inboxes;

    private Inboxes(Map<String, SidecarInbox> inboxes) {
        this.inboxes = inboxes;
    }

    /**
     * The configured inboxes.
     *
     * @return the inboxes, in the configuration's order; empty when none is configured
     */
    public Collection<SidecarInbox> all() {
        return inboxes.values();
    }

    /**
     * One configured inbox.
     *
     * @param name the inbox's name, the key under {@code sidecar.inboxes}
     * @return the inbox named {@code name}, or empty if none is configured by that name
     */
    public Optional<SidecarInbox> get(String name) {
        return Optional.ofNullable(inboxes.get(name));
    }

    /**
     * Whether no inbox is configured.
     *
     * @return {@code true} if {@code sidecar.inboxes} names none
     */
    public boolean isEmpty() {
        return inboxes.isEmpty();
    }

    /**
     * Builds every inbox of {@code p} (none is fine).
     *
     * @throws SidecarConfigException naming the first bad key; whatever was built is closed
     */
    static Inboxes build(SidecarProperties p, Secrets secrets) {
        Map<String, SidecarInbox> built = new LinkedHashMap<>();
        Inboxes result = new Inboxes(built);
        try {
            for (Map.Entry<String, SidecarProperties.Inbox> e : p.getInboxes().entrySet()) {
                built.put(e.getKey(), buildOne(e.getKey(), e.getValue(), secrets));
            }
            return result;
        } catch (RuntimeException e) {
            result.close();
            throw e;
        }
    }

    private static SidecarInbox buildOne(String name, SidecarProperties.Inbox i, Secrets secrets) {
        String prefix = "sidecar.inboxes." + name;
        if (!Outboxes.NAME.matcher(name).matches()) {
            throw new SidecarConfigException(prefix, null, "an inbox name is lower-case letters, digits, '-' and '_'"
                    + " (it appears in URLs)", null);
        }
        List<String> consumers = i.getConsumers() == null ? List.of() : i.getConsumers();
        for (int n = 0; n < consumers.size(); n++) {
            try {
                Inbox.validateConsumer(consumers.get(n));
            } catch (IllegalArgumentException e) {
                throw new SidecarConfigException(prefix + ".consumers[" + n + "]", consumers.get(n), e.getMessage(),
                        null);
            }
        }
        HikariDataSource pool = Outboxes.pool("inbox", name, prefix + ".datasource", i.getDatasource(), secrets);
        try {
            StoreType type = i.getType() != null ? i.getType() : detect(pool, prefix);
            SqlInbox inbox = type == StoreType.POSTGRES ? configure(PostgresInbox.builder(pool), prefix, i)
                    : configure(MySqlInbox.builder(pool), prefix, i);
            try {
                inbox.failedConsumers(1);
            } catch (StoreException e) {
                throw new SidecarConfigException(prefix + ".table", i.getTable(), "cannot read the failed-messages"
                        + " table " + inbox.failedTable() + " (is it the inbox's table, created, and may "
                        + (i.getDatasource().getUsername() == null ? "the user" : "'" + i.getDatasource().getUsername()
                        + "'") + " read it?): " + Outboxes.rootMessage(e), e);
            }
            log.info("Inbox '{}': {} table {}, failed messages shown read-only{}", name, type, inbox.failedTable(),
                    consumers.isEmpty() ? "" : " for " + consumers);
            return new SidecarInbox(name, pool, inbox, type, consumers);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /** The inbox of the builder {@code b} with the schema and table of {@code i}, a rejected name reported by key. */
    private static <B extends SqlInbox.Builder<B, I>, I extends SqlInbox> I configure(B b, String prefix,
                                                                                     SidecarProperties.Inbox i) {
        if (i.getSchema() != null) {
            try {
                b.schema(i.getSchema());
            } catch (IllegalArgumentException e) {
                throw new SidecarConfigException(prefix + ".schema", i.getSchema(), e.getMessage(), e);
            }
        }
        try {
            b.table(i.getTable());
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new SidecarConfigException(prefix + ".table", i.getTable(), e.getMessage(), e);
        }
        return b.build();
    }

    /** Which database the pool is on, when {@code type} is not set. */
    private static StoreType detect(HikariDataSource pool, String prefix) {
        String product;
        try (Connection c = pool.getConnection()) {
            product = c.getMetaData().getDatabaseProductName();
        } catch (SQLException e) {
            throw new SidecarConfigException(prefix + ".type", null, "not set, and the database could not be asked"
                    + " which it is: " + Outboxes.rootMessage(e), e);
        }
        String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
        if (p.contains("postgres")) {
            return StoreType.POSTGRES;
        }
        if (p.contains("mysql") || p.contains("mariadb")) {
            return StoreType.MYSQL;
        }
        throw new SidecarConfigException(prefix + ".type", null, "not set, and the database ('" + product
                + "') has no inbox: use PostgreSQL, MySQL or MariaDB, or set it to postgres or mysql", null);
    }

    /** Closes the pools; idempotent. */
    @Override
    public void close() {
        inboxes.values().forEach(SidecarInbox::closePool);
    }
}
