package dev.outbox.spring;

import dev.outbox.testservers.JdbcServer;

/** {@link UpgradedSchemaContract}: tables of the first release's layout on MySql8, upgraded by Liquibase. */
class MySql8LiquibaseUpgradeContractTest extends UpgradedSchemaContract {
    MySql8LiquibaseUpgradeContractTest() {
        super(new Upgrades(JdbcServer.Kind.MYSQL, SchemaUpgrade.Tool.LIQUIBASE));
    }
}
