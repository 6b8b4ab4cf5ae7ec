package dev.outbox.spring;

import dev.outbox.testservers.JdbcServer;

/** {@link UpgradedSchemaContract}: tables of the first release's layout on Postgres, upgraded by Liquibase. */
class PostgresLiquibaseUpgradeContractTest extends UpgradedSchemaContract {
    PostgresLiquibaseUpgradeContractTest() {
        super(new Upgrades(JdbcServer.Kind.POSTGRES, SchemaUpgrade.Tool.LIQUIBASE));
    }
}
