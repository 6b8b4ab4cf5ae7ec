package dev.outbox.spring;

import dev.outbox.jackson.JacksonPayloadSerializer;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionTemplate;

import javax.sql.DataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link OutboxPublisher}'s choice of connection, with Spring's real transaction managers on an embedded
 * PostgreSQL (the {@code @SpringBootTest}s cover the auto-configured bean inside {@code @Transactional} methods).
 */
class OutboxPublisherTest {
    private static DataSource dataSource;
    private static DataSource otherDataSource;
    private static PostgresStore store;

    @BeforeAll
    static void database() {
        JdbcServer postgres = TestServers.postgres();
        dataSource = postgres.dataSource(postgres.createDatabase("starter_publisher"));
        otherDataSource = postgres.dataSource(postgres.createDatabase("starter_publisher_other"));
        store = PostgresStore.builder(dataSource).build();
        store.createSchema();
    }

    private static OutboxPublisher publisher(boolean requireTransaction) {
        return new OutboxPublisher(dataSource, store.publisher(), JacksonPayloadSerializer.create(),
                requireTransaction);
    }

    @Test
    void withoutARequiredTransactionAPublishCommitsOnItsOwn() {
        long before = store.backlog();

        publisher(false).publish("orders", "alone", "written on its own");

        assertThat(store.backlog()).isEqualTo(before + 1);
    }

    @Test
    void aTransactionOnAnotherDataSourceIsRefusedAndWritesNothing() {
        TransactionTemplate otherTransaction = new TransactionTemplate(new DataSourceTransactionManager(otherDataSource));
        long before = store.backlog();

        assertThatThrownBy(() -> otherTransaction.executeWithoutResult(
                status -> publisher(false).publish("orders", "elsewhere", "wrong transaction")))
                .isInstanceOf(IllegalTransactionStateException.class)
                .hasMessageContaining("holds no connection of the outbox's DataSource");
        assertThat(store.backlog()).isEqualTo(before);
    }

    @Test
    void aRolledBackTransactionTakesItsMessageWithIt() {
        TransactionTemplate transaction = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        long before = store.backlog();

        transaction.executeWithoutResult(status -> {
            publisher(true).publish("orders", "rolled-back", "never seen");
            status.setRollbackOnly();
        });
        transaction.executeWithoutResult(status -> publisher(true).publish("orders", "committed", "seen"));

        assertThat(store.backlog()).isEqualTo(before + 1);
    }

    @Test
    void anAutoCommitOffConnectionIsCommittedWhenNoTransactionIsRequired() throws Exception {
        SingleConnectionDataSource single = new SingleConnectionDataSource(dataSource.getConnection(), true);
        single.setAutoCommit(false);
        try {
            OutboxPublisher p = new OutboxPublisher(single, store.publisher(), JacksonPayloadSerializer.create(), false);
            long before = store.backlog();

            p.publish("orders", "manual-commit", "committed by the publisher");

            assertThat(store.backlog()).isEqualTo(before + 1);
        } finally {
            single.destroy();
        }
    }
}
