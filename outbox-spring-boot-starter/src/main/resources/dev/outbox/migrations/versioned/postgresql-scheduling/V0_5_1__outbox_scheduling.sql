-- dev.outbox's versioned migrations for PostgreSQL, "not before" (PostgresStore.Builder.scheduling(true),
-- outbox.store.scheduling=true): the table "<table>_scheduled" delayed messages wait in until they are due. Idempotent.
-- Needs the message-id function outbox_uuidv7 (the outbox's migrations create it). Placeholders (Flyway) / changelog
-- parameters (Liquibase): outbox_scheduled_table, as it appears in SQL, and its indexes' names, unqualified,
-- outbox_scheduled_due_index and outbox_scheduled_key_index (the Spring Boot starter fills in
-- "<outbox table>_scheduled", "<outbox table>_scheduled_due" and "<outbox table>_scheduled_key" for Flyway unless set).
-- Add the location classpath:dev/outbox/migrations/versioned/postgresql-scheduling.

-- One row per message that waits for its time: the outbox row's columns, and its due time on the database's clock.
-- The leading dispatcher moves the due rows into the outbox in id order (INSERT ... SELECT, then DELETE, in one
-- transaction), a row only when no earlier row of its (topic, key) still waits for its time. A writer in any language
-- schedules a message with
--   INSERT INTO <table>_scheduled (topic, key, value, due_at) VALUES ('orders', 'order-17', 'hello', now() + interval '2 seconds')
-- and, to keep a key's order, writes a message without a time here too (due_at = now()) while its key has a row here:
--   SELECT 1 FROM <table>_scheduled WHERE topic = ? AND key = ? LIMIT 1
CREATE TABLE IF NOT EXISTS ${outbox_scheduled_table} (
    id            bigserial   PRIMARY KEY,          -- the order a key's rows are moved in
    due_at        timestamptz NOT NULL,             -- not moved into the outbox before this time
    topic         text        NOT NULL,
    key           text        NOT NULL,
    value         bytea,                            -- NULL is a tombstone
    header_names  text[]      NOT NULL DEFAULT '{}',
    header_values bytea[]     NOT NULL DEFAULT '{}',
    message_id    uuid        DEFAULT outbox_uuidv7()   -- kept by the move
);
-- The release finds the due rows by this one.
CREATE INDEX IF NOT EXISTS ${outbox_scheduled_due_index} ON ${outbox_scheduled_table} (due_at);
-- A writer's EXISTS, and the release's check for an earlier waiting row of the same key, by this one. A key is
-- indexed whole: one longer than about 2,700 bytes does not fit a B-tree entry and its write fails.
CREATE INDEX IF NOT EXISTS ${outbox_scheduled_key_index} ON ${outbox_scheduled_table} (topic, key, id);
