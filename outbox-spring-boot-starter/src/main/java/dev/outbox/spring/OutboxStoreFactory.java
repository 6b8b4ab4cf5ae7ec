package dev.outbox.spring;

import dev.outbox.MessageDecorator;
import dev.outbox.spi.Store;
import dev.outbox.spring.OutboxProperties.StoreType;
import dev.outbox.store.h2.H2Store;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.postgres.WalHarvest;
import dev.outbox.store.sql.OnDuplicate;
import dev.outbox.store.sql.SqlStoreBuilder;
import org.springframework.util.ClassUtils;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * Builds the store of {@code outbox.store.*} (or of the same settings under another prefix, as the sidecar has one
 * per outbox) over a DataSource, naming the property of a value the store rejects. The store modules are optional
 * dependencies of the starter: each is touched only through its own nested class, loaded only when it is on the
 * class path. Stateless and thread-safe.
 */
public final class OutboxStoreFactory {
    private static final String POSTGRES_CLASS = "dev.outbox.store.postgres.PostgresStore";
    private static final String MYSQL_CLASS = "dev.outbox.store.mysql.MySqlStore";
    private static final String H2_CLASS = "dev.outbox.store.h2.H2Store";

    /**
     * The store, its quoted table names (for migrations' placeholders) and its schema creation.
     *
     * @param store        the store (a {@code PostgresStore}, {@code MySqlStore} or {@code H2Store}, all
     *                     {@code ParkedRecords})
     * @param type         which store it is
     * @param table        the outbox table as it appears in SQL
     * @param parkedTable  the parked table as it appears in SQL
     * @param createSchema creates the tables if they are missing
     * @param leaderTable  the leader table (storage fencing's epoch) as it appears in SQL
     */
    public record Built(Store store, StoreType type, String table, String parkedTable, Runnable createSchema,
                        String leaderTable) {
    }

    private OutboxStoreFactory() {
    }

    static Built build(DataSource dataSource, OutboxStoreProperties p, List<MessageDecorator> decorators) {
        return build(dataSource, "outbox.store", p, decorators);
    }

    /**
     * The store of the settings {@code p} over {@code dataSource}; detects the database when {@code p} names no type.
     *
     * @param dataSource the database of the outbox tables; asked for its product name when {@code p} names no type
     * @param prefix     the settings' property prefix, e.g. {@code outbox.store}: a bad value is reported as
     *                   {@code <prefix>.<setting>}
     * @param p          the store settings (type, schema, table, timeouts, shards, WAL harvest)
     * @return the store with its table names and schema creation; the tables are neither created nor checked yet
     * @throws OutboxConfigurationException naming the property of a value the store rejects
     */
    public static Built build(DataSource dataSource, String prefix, OutboxStoreProperties p) {
        return build(dataSource, prefix, p, List.of());
    }

    /**
     * The store of the settings {@code p} over {@code dataSource}, its publisher applying {@code decorators} to every
     * message, in their order; detects the database when {@code p} names no type.
     *
     * @param dataSource the database of the outbox tables; asked for its product name when {@code p} names no type
     * @param prefix     the settings' property prefix, e.g. {@code outbox.store}: a bad value is reported as
     *                   {@code <prefix>.<setting>}
     * @param p          the store settings (type, schema, table, timeouts, shards, WAL harvest)
     * @param decorators applied by the store's publisher to every message before it is written (tracing, say);
     *                   may be empty
     * @return the store with its table names and schema creation; the tables are neither created nor checked yet
     * @throws OutboxConfigurationException naming the property of a value the store rejects
     */
    public static Built build(DataSource dataSource, String prefix, OutboxStoreProperties p,
                              List<MessageDecorator> decorators) {
        StoreType type = p.getType() != null ? p.getType() : detect(dataSource, prefix);
        String className = switch (type) {
            case POSTGRES -> POSTGRES_CLASS;
            case MYSQL -> MYSQL_CLASS;
            case H2 -> H2_CLASS;
        };
        if (!ClassUtils.isPresent(className, OutboxStoreFactory.class.getClassLoader())) {
            String artifact = "outbox-store-" + type.name().toLowerCase(Locale.ROOT);
            throw new OutboxConfigurationException(prefix + ".type", "the store " + type + " needs dev.outbox:"
                    + artifact + ", which is not on the class path", "add the dependency dev.outbox:" + artifact
                    + ", or set " + prefix + ".type to the store of your database", null);
        }
        return switch (type) {
            case POSTGRES -> Postgres.build(dataSource, prefix, p, decorators);
            case MYSQL -> MySql.build(dataSource, prefix, p, decorators);
            case H2 -> H2.build(dataSource, prefix, p, decorators);
        };
    }

    private static StoreType detect(DataSource dataSource, String prefix) {
        String product;
        try (Connection c = dataSource.getConnection()) {
            product = c.getMetaData().getDatabaseProductName();
        } catch (SQLException e) {
            throw new OutboxConfigurationException(prefix + ".type", "not set, and the database could not be"
                    + " asked which it is: " + e.getMessage(), "set " + prefix + ".type to postgres, mysql or h2, or"
                    + " check the DataSource's settings", e);
        }
        String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
        if (p.contains("postgres")) {
            return StoreType.POSTGRES;
        }
        if (p.contains("mysql") || p.contains("mariadb")) {
            return StoreType.MYSQL;
        }
        if (p.equals("h2")) {
            return StoreType.H2;
        }
        throw new OutboxConfigurationException(prefix + ".type", "not set, and the DataSource's database ('"
                + product + "') has no outbox store", "use PostgreSQL, MySQL, MariaDB (or H2, for development and tests) for the outbox, or set "
                + prefix + ".type if the database is one of them behind another name", null);
    }

    /** Applies one {@code outbox.store.*} setting, naming the property when the builder rejects its value. */
    private static void set(String property, Object value, Runnable setter) {
        try {
            setter.run();
        } catch (IllegalArgumentException e) {
            throw new OutboxConfigurationException(property, "'" + value + "' is not valid: " + e.getMessage(),
                    "use a value the outbox store accepts (see the message)", e);
        }
    }

    /**
     * The delivery options of every SQL store (docs/delivery-options.md): "not before" and idempotency keys; in a
     * class of its own so that {@code outbox-store-sql} is touched only once a store is built.
     */
    private static final class DeliveryOptions {
        static void apply(String prefix, OutboxStoreProperties p, SqlStoreBuilder<?, ?> b) {
            b.scheduling(p.isScheduling());
            if (!p.isScheduledHoldsKey() && !p.isScheduling()) {
                throw new OutboxConfigurationException(prefix + ".scheduled-holds-key", "is false, but " + prefix
                        + ".scheduling is not true: without scheduling no message waits, so there is no key to hold",
                        "set " + prefix + ".scheduling to true, or remove " + prefix + ".scheduled-holds-key", null);
            }
            b.scheduledHoldsKey(p.isScheduledHoldsKey());
            OutboxIdempotencyProperties idempotency = p.getIdempotency();
            String onDuplicate = prefix + ".idempotency.on-duplicate";
            if (idempotency.getOnDuplicate() == null) {
                throw new OutboxConfigurationException(onDuplicate, "is empty", "set it to skip (the default) or"
                        + " fail, or remove it", null);
            }
            if (idempotency.getRetention() == null) {
                if (idempotency.getOnDuplicate() != OutboxIdempotencyProperties.OnDuplicate.SKIP) {
                    throw new OutboxConfigurationException(onDuplicate, "is " + idempotency.getOnDuplicate()
                            + ", but idempotency keys are off: " + prefix + ".idempotency.retention is not set",
                            "set " + prefix + ".idempotency.retention (for example 7d) to turn them on, or remove "
                                    + onDuplicate, null);
                }
                return;
            }
            set(prefix + ".idempotency.retention", idempotency.getRetention(),
                    () -> b.idempotencyKeys(idempotency.getRetention()));
            b.onDuplicate(idempotency.getOnDuplicate() == OutboxIdempotencyProperties.OnDuplicate.FAIL
                    ? OnDuplicate.FAIL : OnDuplicate.SKIP);
        }
    }

    static final class Postgres {
        static Built build(DataSource dataSource, String prefix, OutboxStoreProperties p,
                           List<MessageDecorator> decorators) {
            PostgresStore.Builder b = PostgresStore.builder(dataSource);
            decorators.forEach(b::decorator);
            if (p.getSchema() != null) {
                set(prefix + ".schema", p.getSchema(), () -> b.schema(p.getSchema()));
            }
            set(prefix + ".table", p.getTable(), () -> b.table(p.getTable()));
            set(prefix + ".statement-timeout", p.getStatementTimeout(),
                    () -> b.statementTimeout(p.getStatementTimeout()));
            if (p.getMaxKeyLength() != null) {
                set(prefix + ".max-key-length", p.getMaxKeyLength(), () -> b.maxKeyLength(p.getMaxKeyLength()));
            }
            b.commitNotifications(p.isCommitNotifications());
            b.fencing(p.isFencing());
            b.keySequence(p.isKeySequence());
            DeliveryOptions.apply(prefix, p, b);
            if (p.getLateCommitWindow() != null) {
                throw new OutboxConfigurationException(prefix + ".late-commit-window", "is set, but the Postgres"
                        + " store has no late-commit window: its harvest reads the writers' transaction ids",
                        "remove " + prefix + ".late-commit-window (it is for MySQL, MariaDB and H2)", null);
            }
            set(prefix + ".shards", p.getShards(), () -> b.shards(p.getShards()));
            OutboxWalProperties wal = p.getWal();
            if (wal.getUrl() != null) {
                if (p.getShards() > 1) {
                    throw new OutboxConfigurationException(prefix + ".shards", "is " + p.getShards() + ", but the"
                            + " WAL harvest (" + prefix + ".wal.url) cannot be sharded: it streams the outbox from"
                            + " one replication slot, read by one leader", "set " + prefix + ".shards to 1, or remove "
                            + prefix + ".wal.url to harvest the table", null);
                }
                if (p.isScheduling()) {
                    throw new OutboxConfigurationException(prefix + ".scheduling", "is true, but the WAL harvest ("
                            + prefix + ".wal.url) cannot hold a message back until its time: it streams each message"
                            + " as its writer commits", "remove " + prefix + ".scheduling, or remove " + prefix
                            + ".wal.url to harvest the table", null);
                }
                b.walHarvest(walHarvest(prefix + ".wal", wal));
            }
            PostgresStore store = b.build();
            return new Built(store, StoreType.POSTGRES, store.table(), store.parkedTable(), store::createSchema,
                    store.leaderTable());
        }

        static WalHarvest walHarvest(String prefix, OutboxWalProperties wal) {
            WalHarvest.Builder[] w = new WalHarvest.Builder[1];
            set(prefix + ".url", wal.getUrl(), () -> w[0] = WalHarvest.builder(wal.getUrl()));
            if (wal.getUsername() != null) {
                w[0].user(wal.getUsername());
            }
            if (wal.getPassword() != null) {
                w[0].password(wal.getPassword());
            }
            if (wal.getSlot() != null) {
                set(prefix + ".slot", wal.getSlot(), () -> w[0].slot(wal.getSlot()));
            }
            if (wal.getPublication() != null) {
                set(prefix + ".publication", wal.getPublication(), () -> w[0].publication(wal.getPublication()));
            }
            set(prefix + ".takeover-timeout", wal.getTakeoverTimeout(),
                    () -> w[0].takeoverTimeout(wal.getTakeoverTimeout()));
            Duration status = wal.getStatusInterval();
            if (status != null && (status.compareTo(Duration.ofMillis(10)) < 0
                    || status.compareTo(Duration.ofHours(1)) > 0)) {
                throw new OutboxConfigurationException(prefix + ".status-interval", "'" + status + "' is not"
                        + " valid: it must be between 10 ms and 1 h", "use a value between 10ms and 1h", null);
            }
            set(prefix + ".status-interval", wal.getStatusInterval(),
                    () -> w[0].statusInterval(wal.getStatusInterval()));
            set(prefix + ".read-wait", wal.getReadWait(), () -> w[0].readWait(wal.getReadWait()));
            set(prefix + ".max-buffered", wal.getMaxBuffered(), () -> w[0].maxBuffered(wal.getMaxBuffered()));
            wal.getProperties().forEach((name, value) -> set(prefix + ".properties[" + name + "]", value,
                    () -> w[0].property(name, value)));
            return w[0].build();
        }
    }

    private static final class MySql {
        static Built build(DataSource dataSource, String prefix, OutboxStoreProperties p,
                           List<MessageDecorator> decorators) {
            if (p.getWal().getUrl() != null) {
                throw new OutboxConfigurationException(prefix + ".wal.url", "is set, but the WAL harvest needs"
                        + " Postgres and the store is MySQL", "remove " + prefix + ".wal.url: MySQL and MariaDB"
                        + " are harvested from the table", null);
            }
            MySqlStore.Builder b = MySqlStore.builder(dataSource);
            decorators.forEach(b::decorator);
            if (p.getSchema() != null) {
                set(prefix + ".schema", p.getSchema(), () -> b.schema(p.getSchema()));
            }
            set(prefix + ".table", p.getTable(), () -> b.table(p.getTable()));
            set(prefix + ".statement-timeout", p.getStatementTimeout(),
                    () -> b.statementTimeout(p.getStatementTimeout()));
            if (p.getMaxKeyLength() != null) {
                set(prefix + ".max-key-length", p.getMaxKeyLength(), () -> b.maxKeyLength(p.getMaxKeyLength()));
            }
            set(prefix + ".shards", p.getShards(), () -> b.shards(p.getShards()));
            b.fencing(p.isFencing());
            b.keySequence(p.isKeySequence());
            DeliveryOptions.apply(prefix, p, b);
            if (p.getLateCommitWindow() != null) {
                set(prefix + ".late-commit-window", p.getLateCommitWindow(),
                        () -> b.lateCommitWindow(p.getLateCommitWindow()));
            }
            MySqlStore store = b.build();
            return new Built(store, StoreType.MYSQL, store.table(), store.parkedTable(), store::createSchema,
                    store.leaderTable());
        }
    }

    private static final class H2 {
        static Built build(DataSource dataSource, String prefix, OutboxStoreProperties p,
                           List<MessageDecorator> decorators) {
            if (p.getWal().getUrl() != null) {
                throw new OutboxConfigurationException(prefix + ".wal.url", "is set, but the WAL harvest needs"
                        + " Postgres and the store is H2", "remove " + prefix + ".wal.url: H2 is harvested from the"
                        + " table", null);
            }
            if (p.getShards() > 1) {
                throw new OutboxConfigurationException(prefix + ".shards", "is " + p.getShards() + ", but the H2"
                        + " store has one shard (it is for development and tests)", "set " + prefix + ".shards to 1"
                        + " for H2", null);
            }
            H2Store.Builder b = H2Store.builder(dataSource);
            decorators.forEach(b::decorator);
            if (p.getSchema() != null) {
                set(prefix + ".schema", p.getSchema(), () -> b.schema(p.getSchema()));
            }
            set(prefix + ".table", p.getTable(), () -> b.table(p.getTable()));
            set(prefix + ".statement-timeout", p.getStatementTimeout(),
                    () -> b.statementTimeout(p.getStatementTimeout()));
            if (p.getMaxKeyLength() != null) {
                set(prefix + ".max-key-length", p.getMaxKeyLength(), () -> b.maxKeyLength(p.getMaxKeyLength()));
            }
            b.fencing(p.isFencing());
            b.keySequence(p.isKeySequence());
            DeliveryOptions.apply(prefix, p, b);
            if (p.getLateCommitWindow() != null) {
                set(prefix + ".late-commit-window", p.getLateCommitWindow(),
                        () -> b.lateCommitWindow(p.getLateCommitWindow()));
            }
            H2Store store = b.build();
            return new Built(store, StoreType.H2, store.table(), store.parkedTable(), store::createSchema,
                    store.leaderTable());
        }
    }
}
