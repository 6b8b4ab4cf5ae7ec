package dev.outbox.it;

import dev.outbox.DispatcherConfig;

import java.time.Duration;

/**
 * Where a scenario's nodes connect (the database; {@code broker}, the data path's broker) and how they are tuned; {@code walHarvest}: whether their stores stream the
 * outbox from the database's logical replication slot instead of reading its table; {@code election}: how they
 * elect their leader.
 */
record Settings(String jdbcUrl, String dbUser, String dbPassword, DataBroker broker, String leaderTopic,
                DispatcherConfig config, Duration deliveryTimeout, Duration sessionTimeout, boolean walHarvest,
                Scenario.Election election) {

    /** These settings with the dispatcher harvesting by {@code harvest}. */
    Settings withHarvest(DispatcherConfig.Harvest harvest) {
        return new Settings(jdbcUrl, dbUser, dbPassword, broker, leaderTopic,
                config.toBuilder().harvest(harvest).build(), deliveryTimeout, sessionTimeout, walHarvest, election);
    }
}
