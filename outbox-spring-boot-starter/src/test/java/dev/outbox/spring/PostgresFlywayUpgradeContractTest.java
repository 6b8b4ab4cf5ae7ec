package dev.outbox.spring;

import dev.outbox.testservers.JdbcServer;

/** {@link UpgradedSchemaContract}: tables of the first release's layout on Postgres, upgraded by Flyway. */
class PostgresFlywayUpgradeContractTest extends UpgradedSchemaContract {
    PostgresFlywayUpgradeContractTest() {
        super(new Upgrades(JdbcServer.Kind.POSTGRES, SchemaUpgrade.Tool.FLYWAY));
    }
}
