package dev.outbox.spring;

import dev.outbox.store.mysql.MySqlStore;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Flyway/Liquibase migrations the starter ships hold the same DDL as the stores' own schema.sql (which
 * {@code createSchema()} applies), with the placeholders renamed (the message-id
 * default: Postgres' function under its default name, {@code outbox_uuidv7}; MySQL's expression written out): they cannot drift apart. That they run is shown by
 * the Spring Boot tests (Flyway on Postgres, Liquibase on MySQL).
 */
class ShippedMigrationsTest {

    @ParameterizedTest
    @CsvSource({
            "dev/outbox/store/postgres/schema.sql, dev/outbox/migrations/postgresql/R__outbox_tables.sql",
            "dev/outbox/store/mysql/schema.sql, dev/outbox/migrations/mysql/R__outbox_tables.sql",
            "dev/outbox/store/mysql/id-guard.sql, dev/outbox/migrations/mysql/R__outbox_tables_id_guard.sql"})
    void theMigrationIsTheStoresSchemaWithRenamedPlaceholders(String schema, String migration) throws IOException {
        String expected = body(resource(schema)).replace("${outbox}", "${outbox_table}")
                .replace("${parked}", "${outbox_parked_table}").replace("${leader}", "${outbox_leader_table}")
                .replace("${uuidv7}", schema.contains("/mysql/") ? MySqlStore.UUIDV7_EXPRESSION : "outbox_uuidv7")
                .replace("${idGuard}", schema.contains("/mysql/") ? "${outbox_id_guard}" : "outbox_id_guard")
                // the migrations create an unsharded outbox: as a store with shards(1) fills these in
                .replace("${shardColumn}", "").replace("${leaderIds}", "id = 1");

        assertThat(body(resource(migration))).isEqualTo(expected);
    }

    /** The versioned migrations of the inbox hold the inbox's own DDL, with the placeholders renamed. */
    @ParameterizedTest
    @CsvSource({
            "dev/outbox/store/postgres/inbox.sql, dev/outbox/migrations/versioned/postgresql-inbox/V0_2_1__outbox_inbox.sql",
            "dev/outbox/store/mysql/inbox.sql, dev/outbox/migrations/versioned/mysql-inbox/V0_2_1__outbox_inbox.sql"})
    void theInboxMigrationIsTheInboxsSchema(String schema, String migration) throws IOException {
        String expected = body(resource(schema)).replace("${inbox_index}", "${outbox_inbox_index}")
                .replace("${inbox}", "${outbox_inbox_table}").replace("${failed}", "${outbox_inbox_failed_table}");
        assertThat(body(resource(migration))).isEqualTo(expected);
    }

    /** The versioned migrations of the per-key sequence hold the store's own DDL, with the placeholder renamed. */
    @ParameterizedTest
    @CsvSource({
            "dev/outbox/store/postgres/key-sequence.sql, dev/outbox/migrations/versioned/postgresql-key-sequence/V0_4_1__outbox_key_sequence.sql",
            "dev/outbox/store/mysql/key-sequence.sql, dev/outbox/migrations/versioned/mysql-key-sequence/V0_4_1__outbox_key_sequence.sql"})
    void theKeySequenceMigrationIsTheStoresKeySequenceSchema(String schema, String migration) throws IOException {
        String expected = body(resource(schema)).replace("${keySeq}", "${outbox_key_seq_table}");
        assertThat(body(resource(migration))).isEqualTo(expected);
    }

    /**
     * The versioned migrations of "not before" hold the store's own scheduled table, with the placeholders renamed
     * (from the table's comment on: the store's file header has no blank line to end it).
     */
    @ParameterizedTest
    @CsvSource({
            "dev/outbox/store/postgres/scheduling.sql, dev/outbox/migrations/versioned/postgresql-scheduling/V0_5_1__outbox_scheduling.sql",
            "dev/outbox/store/mysql/scheduling.sql, dev/outbox/migrations/versioned/mysql-scheduling/V0_5_1__outbox_scheduling.sql"})
    void theSchedulingMigrationIsTheStoresSchedulingSchema(String schema, String migration) throws IOException {
        String start = "-- One row per message that waits for its time";
        String store = resource(schema);
        String expected = store.substring(store.indexOf(start))
                .replace("${scheduledDueIndex}", "${outbox_scheduled_due_index}")
                .replace("${scheduledKeyIndex}", "${outbox_scheduled_key_index}")
                .replace("${scheduled}", "${outbox_scheduled_table}")
                .replace("${uuidv7}", schema.contains("/mysql/") ? MySqlStore.UUIDV7_EXPRESSION : "outbox_uuidv7");
        String shipped = resource(migration);
        assertThat(store).contains(start);
        assertThat(shipped.substring(shipped.indexOf(start))).isEqualTo(expected);
    }

    /** The versioned migrations of the idempotency keys hold the store's own DDL, with the placeholder renamed. */
    @ParameterizedTest
    @CsvSource({
            "dev/outbox/store/postgres/idempotency.sql, dev/outbox/migrations/versioned/postgresql-idempotency/V0_6_1__outbox_idempotency.sql",
            "dev/outbox/store/mysql/idempotency.sql, dev/outbox/migrations/versioned/mysql-idempotency/V0_6_1__outbox_idempotency.sql"})
    void theIdempotencyMigrationIsTheStoresIdempotencySchema(String schema, String migration) throws IOException {
        String expected = body(resource(schema)).replace("${idempotency}", "${outbox_idempotency_table}");
        assertThat(body(resource(migration))).isEqualTo(expected);
    }

    /** The WAL harvest's versioned migration holds the store's writer functions, with the placeholders renamed. */
    @org.junit.jupiter.api.Test
    void theWalMigrationIsTheStoresWriterFunctions() throws IOException {
        String start = "-- The content of one message in format version 1. The arguments";
        String wal = resource("dev/outbox/store/postgres/wal.sql");
        String expected = wal.substring(wal.indexOf(start)).replace("${wal_encode}", "${outbox_wal_encode}")
                .replace("${emit}", "${outbox_emit}").replace("${uuidv7}", "outbox_uuidv7")
                .replace("${prefix}", "'${outbox_wal_prefix}'");
        String migration = resource("dev/outbox/migrations/versioned/postgresql-wal/V0_3_1__outbox_wal_functions.sql");
        assertThat(migration.substring(migration.indexOf(start))).isEqualTo(expected);
    }

    /** The id default and id guard step of the Postgres versioned migrations is the repeatable migration's. */
    @org.junit.jupiter.api.Test
    void theIdGuardStepIsTheRepeatableMigrations() throws IOException {
        assertThat(resource("dev/outbox/migrations/postgresql/R__outbox_tables.sql"))
                .contains(body(resource("dev/outbox/migrations/versioned/postgresql/V0_1_5__outbox_id_default_and_guard.sql")));
    }

    /** The DDL after the file's header comment (which differs: it says how each file is used). */
    private static String body(String sql) {
        return sql.substring(sql.indexOf("\n\n") + 2);
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = ShippedMigrationsTest.class.getClassLoader().getResourceAsStream(name)) {
            assertThat(in).as(name).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
