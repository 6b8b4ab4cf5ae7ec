package dev.outbox.examples;

import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.postgres.WalHarvest;

import javax.sql.DataSource;

/**
 * The README's WAL-harvest snippet, in compiled code that {@code WalSnippetsTest} runs; the region between
 * {@code tag::} and {@code end::} is what the README shows (checked by {@code ReadmeSnippetsTest}).
 */
final class WalSnippets {

    private WalSnippets() {
    }

    static PostgresStore walStore(DataSource dataSource, String jdbcUrl, String replicationUser, String password) {
        // tag::wal[]
        PostgresStore store = PostgresStore.builder(dataSource)
                .walHarvest(WalHarvest.builder(jdbcUrl)               // the outbox's database, no password in it
                        .user(replicationUser).password(password)    // a role WITH REPLICATION
                        .build())
                .build();
        store.createSchema();   // parked table, <table>_emit(...) for plain SQL, the slot and its publication
        // end::wal[]
        return store;
    }
}
