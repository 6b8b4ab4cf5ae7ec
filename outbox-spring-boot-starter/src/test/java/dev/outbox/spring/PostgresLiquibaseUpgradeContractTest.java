package dev.outbox.spring;

import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.Tag;

/**
 * {@link UpgradedSchemaContract}: tables of the first release's layout on Postgres, upgraded by Liquibase. Tagged
 * slow (outside the build, about 175 s on the loaded 2-core machine: two Liquibase runs per test): the build runs the
 * contract on Postgres upgraded by Flyway and on MySQL 8 upgraded by Liquibase, and {@link SchemaUpgradeTest} checks
 * this upgrade's layout, rows and second run. {@code ./mvnw -B verify -pl outbox-spring-boot-starter -am
 * -DexcludedGroups= -Dtest='*UpgradeContractTest' -Dsurefire.failIfNoSpecifiedTests=false} runs all four.
 */
@Tag("slow")
class PostgresLiquibaseUpgradeContractTest extends UpgradedSchemaContract {
    PostgresLiquibaseUpgradeContractTest() {
        super(new Upgrades(JdbcServer.Kind.POSTGRES, SchemaUpgrade.Tool.LIQUIBASE));
    }
}
