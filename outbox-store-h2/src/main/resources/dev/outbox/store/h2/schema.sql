-- Outbox tables for dev.outbox (outbox-store-h2); needs H2 2.2 or newer (RANDOM_UUID(7)). For development and
-- tests: an application that runs on PostgreSQL or MySQL in production takes that store there.
-- ${outbox}, ${parked} and ${leader} stand for the configured table, its parked table ("<table>_parked") and its
-- leader table ("<table>_leader"), quoted and optionally schema-qualified; H2Store.schemaSql() renders this file,
-- H2Store.createSchema() applies it. Every statement is idempotent. Statements end with ";" at the end of a line.
-- KEY and VALUE are reserved words in H2: quote them ("key", "value") in your own SQL. Other columns are unquoted.

-- One row per message. Applications insert (topic, "key", "value", header_names, header_values) in their own
-- transaction; the dispatcher reads rows in id order (or marks them, leader_id), deletes delivered ones, and records
-- a failed delivery (attempts, next_attempt_at).
CREATE TABLE IF NOT EXISTS ${outbox} (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- delivery order: H2 assigns it, an INSERT
                                                     -- that sets it is refused
    create_time     TIMESTAMP(6) WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP,
    topic           CHARACTER VARYING NOT NULL,
    "key"           CHARACTER VARYING NOT NULL,      -- records of one key are delivered in id order
    "value"         BINARY VARYING,                  -- NULL is a tombstone
    header_names    CHARACTER VARYING ARRAY NOT NULL DEFAULT ARRAY[],
    header_values   BINARY VARYING ARRAY NOT NULL DEFAULT ARRAY[], -- parallel to header_names; an element may be NULL
    leader_id       UUID,                            -- the leader that marked the row; NULL when unmarked
    attempts        INTEGER NOT NULL DEFAULT 0,      -- failed deliveries so far
    message_id      UUID NOT NULL DEFAULT RANDOM_UUID(7), -- the message's identity for consumers; kept through replay
    next_attempt_at TIMESTAMP(6) WITH TIME ZONE      -- set by a failed delivery: not retried before this time
);

-- Ids are the outbox's, never the writer's: a negative id would lie below every cursor and never be read, an id far
-- above the identity would move the cursor past every later row. GENERATED ALWAYS refuses an INSERT that sets it; a
-- table created BY DEFAULT (before #42) is changed in place.
ALTER TABLE ${outbox} ALTER COLUMN id SET GENERATED ALWAYS;

-- Rows that will not be retried; an operator lists and replays them, or deletes them.
CREATE TABLE IF NOT EXISTS ${parked} (
    id              BIGINT PRIMARY KEY,              -- the row's id in the outbox when it was parked
    create_time     TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    topic           CHARACTER VARYING NOT NULL,
    "key"           CHARACTER VARYING NOT NULL,
    "value"         BINARY VARYING,
    header_names    CHARACTER VARYING ARRAY NOT NULL,
    header_values   BINARY VARYING ARRAY NOT NULL,
    leader_id       UUID,
    attempts        INTEGER NOT NULL,
    message_id      UUID,
    reason          CHARACTER VARYING NOT NULL,      -- why it was parked, for a human
    parked_at       TIMESTAMP(6) WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- Storage fencing: the outbox's leader epoch, in one row, locked FOR UPDATE by every fenced write.
CREATE TABLE IF NOT EXISTS ${leader} (
    id          SMALLINT PRIMARY KEY CHECK (id = 1),
    epoch       BIGINT NOT NULL,
    acquired_at TIMESTAMP(6) WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP
);
