package dev.outbox.spring;

import dev.outbox.testservers.JdbcServer;

/** {@link UpgradedSchemaContract}: tables of the first release's layout on MySql8, upgraded by Flyway. */
class MySql8FlywayUpgradeContractTest extends UpgradedSchemaContract {
    MySql8FlywayUpgradeContractTest() {
        super(new Upgrades(JdbcServer.Kind.MYSQL, SchemaUpgrade.Tool.FLYWAY));
    }
}
