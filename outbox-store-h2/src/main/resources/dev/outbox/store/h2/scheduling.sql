-- The scheduled messages of dev.outbox (outbox-store-h2), for a store built with scheduling(true) ("not before"):
-- H2Store.schedulingSchemaSql() renders this file, H2Store.createSchema() applies it when scheduling is on.
-- ${scheduled} stands for "<table>_scheduled", quoted and optionally schema-qualified like the outbox. Idempotent.
-- Statements end with ";" at the end of a line.

-- One row per message that waits for its time: the outbox row's columns, and its due time on the database's clock.
-- The leading dispatcher moves the due rows into the outbox in id order, a row only when no earlier row of its
-- (topic, key) still waits for its time.
CREATE TABLE IF NOT EXISTS ${scheduled} (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- the order a key's rows are moved in
    due_at        TIMESTAMP(6) WITH TIME ZONE NOT NULL,            -- not moved into the outbox before this time
    topic         CHARACTER VARYING NOT NULL,
    "key"         CHARACTER VARYING NOT NULL,
    "value"       BINARY VARYING,
    header_names  CHARACTER VARYING ARRAY NOT NULL DEFAULT ARRAY[],
    header_values BINARY VARYING ARRAY NOT NULL DEFAULT ARRAY[],
    message_id    UUID NOT NULL DEFAULT RANDOM_UUID(7)
);
CREATE INDEX IF NOT EXISTS ${scheduledDueIndex} ON ${scheduled} (due_at);
CREATE INDEX IF NOT EXISTS ${scheduledKeyIndex} ON ${scheduled} (topic, "key", id);
