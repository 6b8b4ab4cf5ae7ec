-- The shipped migration as it was first released (git 7ebc89d): the oldest layout, the same DDL as that release's
-- schema.sql of outbox-store-postgres. Read by SchemaUpgradeTest and UpgradedSchemaContract (the starter: Flyway and
-- Liquibase run it with the placeholders) and by PostgresSchemaUpgradeTest (outbox-store-postgres: fills them in itself).
-- Do not change.
-- Outbox tables for dev.outbox (PostgreSQL 13 or newer), as a Flyway repeatable migration and a Liquibase SQL file.
-- Placeholders (Flyway) / changelog parameters (Liquibase): outbox_table and outbox_parked_table, the tables as
-- they appear in SQL (the Spring Boot starter fills both in from outbox.store.* for Flyway). The same DDL as the
-- store's schema.sql resource; every statement is idempotent.

-- One row per message. Applications insert (topic, key, value, header_names, header_values) in their own
-- transaction; the dispatcher marks rows (leader_id), deletes delivered ones and resets failed ones.
CREATE TABLE IF NOT EXISTS ${outbox_table} (
    id            bigserial   PRIMARY KEY,          -- delivery order; the mark walks this index from its head
    create_time   timestamptz NOT NULL DEFAULT now(),
    topic         text        NOT NULL,
    key           text        NOT NULL,             -- records of one key are delivered in id order
    value         bytea,                            -- NULL is a tombstone
    header_names  text[]      NOT NULL DEFAULT '{}',
    header_values bytea[]     NOT NULL DEFAULT '{}', -- parallel to header_names; an element may be NULL
    leader_id     uuid,                             -- the leader that marked the row; NULL when unmarked
    attempts      integer     NOT NULL DEFAULT 0    -- failed deliveries so far
)
-- The table is a queue: rows are inserted, marked (an UPDATE), and deleted within moments, so it carries far
-- more dead row versions than live rows, and its live size swings from millions to zero.
--  * fillfactor: leaves room on each page so that marking and resetting a row writes its new version on the
--    same page (a HOT update, no new index entry). Measured on a 2-core machine with PostgreSQL 15, draining
--    300,000 rows in batches of 1,000 (mark, then delete) took 13.4 s at fillfactor 100 and 5.8 s at 70.
--  * autovacuum: the defaults vacuum a table once 20% of its (estimated) rows are dead and throttle the vacuum.
--    For a queue that estimate is meaningless: after a large backlog the table waits for hundreds of thousands
--    of dead rows, and in the meantime every mark walks over dead index entries at the head of the primary key
--    (measured with autovacuum off: the drain rate fell from ~50k to ~6k rows/s, with 7 s marks). Fixed thresholds and no cost delay
--    keep vacuum frequent and quick; a fixed analyze threshold keeps the planner's row estimates current.
--  These settings apply when the table is created; change them later with ALTER TABLE ... SET (...).
WITH (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 10000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 10000,
    autovacuum_vacuum_cost_delay = 0
);

-- Rows that will not be retried: delivery failed too often, the broker rejected them for good, or they could
-- not be read as messages. The dispatcher never reads this table; an operator lists and replays its rows
-- (PostgresStore.parked / replay), or deletes them.
CREATE TABLE IF NOT EXISTS ${outbox_parked_table} (
    id            bigint      PRIMARY KEY,          -- the row's id in the outbox when it was parked
    create_time   timestamptz NOT NULL,
    topic         text        NOT NULL,
    key           text        NOT NULL,
    value         bytea,
    header_names  text[]      NOT NULL,
    header_values bytea[]     NOT NULL,
    leader_id     uuid,
    attempts      integer     NOT NULL,
    reason        text        NOT NULL,             -- why it was parked, for a human
    parked_at     timestamptz NOT NULL DEFAULT now()
);
