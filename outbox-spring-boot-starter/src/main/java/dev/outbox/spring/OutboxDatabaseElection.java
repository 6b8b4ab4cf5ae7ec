package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.Store;
import dev.outbox.store.sql.SqlLeaderTransport;
import dev.outbox.store.sql.SqlShardedLeaderTransport;
import dev.outbox.store.sql.SqlStore;

import java.time.Duration;

/**
 * Leader election in the outbox's own database ({@code leader-election: database}): a {@link SqlLeaderTransport}, or
 * a {@link SqlShardedLeaderTransport} for a sharded outbox, built from the store with the dispatcher's timings and the
 * broker's delivery timeout. Shared with the sidecar. Stateless and thread-safe.
 */
public final class OutboxDatabaseElection {
    private OutboxDatabaseElection() {
    }

    /**
     * Gives {@code builder} the database's leader transport for {@code store}.
     *
     * @param builder         the dispatcher's builder
     * @param store           the outbox's store; it must be a SQL store (Postgres, MySQL, MariaDB, H2)
     * @param config          the dispatcher's configuration (heartbeat timeout, poll interval)
     * @param deliveryTimeout the broker's delivery timeout: the lease must outlast it
     * @param key             the {@code leader-election} property's full name, for messages
     * @throws OutboxConfigurationException naming {@code key} if the store cannot host a lease, or the timings break a
     *                                      relation the lease needs
     */
    public static void apply(Dispatcher.Builder builder, Store store, DispatcherConfig config, Duration deliveryTimeout,
                             String key) {
        if (!org.springframework.util.ClassUtils.isPresent("dev.outbox.store.sql.SqlStore",
                OutboxDatabaseElection.class.getClassLoader()) || !(store instanceof SqlStore sql)) {
            throw new OutboxConfigurationException(key, "is database, but the outbox's store (" + store + ") is not a"
                    + " SQL store and cannot host a lease", "use a Postgres, MySQL, MariaDB or H2 store, or set it"
                    + " to kafka or none", null);
        }
        try {
            if (Sharding.of(sql) > 1) {
                builder.leaderTransport(SqlShardedLeaderTransport.builder(sql).dispatcherConfig(config)
                        .deliveryTimeout(deliveryTimeout).build());
            } else {
                builder.leaderTransport(SqlLeaderTransport.builder(sql).dispatcherConfig(config)
                        .deliveryTimeout(deliveryTimeout).build());
            }
        } catch (IllegalArgumentException e) {
            throw new OutboxConfigurationException(key, "is database, but " + OutboxSchemaInitializer.oneLine(e),
                    "lengthen the dispatcher's heartbeat-timeout or shorten its poll-interval, or the broker's"
                    + " delivery timeout", e);
        }
    }
}
