-- The scheduled messages of dev.outbox (outbox-store-postgres), for a store built with scheduling(true) ("not
-- before"): PostgresStore.schedulingSchemaSql() renders this file, PostgresStore.createSchema() applies it when
-- scheduling is on. ${scheduled} stands for "<table>_scheduled", quoted and schema-qualified like the outbox.
-- Idempotent.
--
-- One row per message that waits for its time: the outbox row's columns, and its due time on the database's clock.
-- The leading dispatcher moves the due rows into the outbox in id order (INSERT ... SELECT, then DELETE, in one
-- transaction), a row only when no earlier row of its (topic, key) still waits for its time. A writer in any language
-- schedules a message with
--   INSERT INTO <table>_scheduled (topic, key, value, due_at) VALUES ('orders', 'order-17', 'hello', now() + interval '2 seconds')
-- and, to keep a key's order, writes a message without a time here too (due_at = now()) while its key has a row here:
--   SELECT 1 FROM <table>_scheduled WHERE topic = ? AND key = ? LIMIT 1
CREATE TABLE IF NOT EXISTS ${scheduled} (
    id            bigserial   PRIMARY KEY,          -- the order a key's rows are moved in
    due_at        timestamptz NOT NULL,             -- not moved into the outbox before this time
    topic         text        NOT NULL,
    key           text        NOT NULL,
    value         bytea,                            -- NULL is a tombstone
    header_names  text[]      NOT NULL DEFAULT '{}',
    header_values bytea[]     NOT NULL DEFAULT '{}',
    message_id    uuid        DEFAULT ${uuidv7}()   -- kept by the move
);
-- The release finds the due rows by this one.
CREATE INDEX IF NOT EXISTS ${scheduledDueIndex} ON ${scheduled} (due_at);
-- A writer's EXISTS, and the release's check for an earlier waiting row of the same key, by this one. A key is
-- indexed whole: one longer than about 2,700 bytes does not fit a B-tree entry and its write fails.
CREATE INDEX IF NOT EXISTS ${scheduledKeyIndex} ON ${scheduled} (topic, key, id);
