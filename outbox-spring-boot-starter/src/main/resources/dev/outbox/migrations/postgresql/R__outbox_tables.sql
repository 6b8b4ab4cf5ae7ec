-- Outbox tables for dev.outbox (PostgreSQL 13 or newer), as a Flyway repeatable migration and a Liquibase SQL file.
-- Placeholders (Flyway) / changelog parameters (Liquibase): outbox_table, outbox_parked_table and outbox_leader_table, the
-- tables as
-- they appear in SQL (the Spring Boot starter fills them in from outbox.store.* for Flyway). The same DDL as the
-- store's schema.sql resource; every statement is idempotent, and it also upgrades an outbox table of an earlier
-- version (the id default, below), so it is safe to run again whenever it changes (Flyway: a repeatable migration;
-- Liquibase: runOnChange, sent as one statement so that the DO block is not split at its semicolons).

-- A time-ordered UUID (version 7, RFC 9562): 48 bits of Unix time in milliseconds, then random bits. The
-- publisher assigns message ids in Java; this function is the column default for rows written by plain SQL (and
-- PostgreSQL before 18 has no uuidv7() of its own). It takes a version 4 UUID, writes the time over its first six
-- bytes, and turns its version nibble from 4 (0100) into 7 (0111) by setting bits 52 and 53.
CREATE OR REPLACE FUNCTION outbox_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;

-- One row per message. Applications insert (topic, key, value, header_names, header_values) in their own
-- transaction; the dispatcher reads rows in id order (or marks them, leader_id, with the MARK harvest), deletes
-- delivered ones, and records a failed delivery (attempts, next_attempt_at) so that the key's head record is
-- retried after its backoff, even by a new leader.
CREATE TABLE IF NOT EXISTS ${outbox_table} (
    id            bigserial   PRIMARY KEY,          -- delivery order; the harvest walks this index from its head.
                                                    -- Its default is replaced below, and an INSERT that sets it
                                                    -- is refused (the id guard below): leave it out.
    create_time   timestamptz NOT NULL DEFAULT now(),
    topic         text        NOT NULL,
    key           text        NOT NULL,             -- records of one key are delivered in id order
    value         bytea,                            -- NULL is a tombstone
    header_names  text[]      NOT NULL DEFAULT '{}',
    header_values bytea[]     NOT NULL DEFAULT '{}', -- parallel to header_names; an element may be NULL
    leader_id     uuid,                             -- the leader that marked the row; NULL when unmarked
    attempts      integer     NOT NULL DEFAULT 0,   -- failed deliveries so far
    message_id    uuid        DEFAULT outbox_uuidv7(),  -- the message's identity for consumers (the Kafka header
                                                    -- outbox-message-id); kept through reset, park and replay.
                                                    -- NULL only in rows older than the column: mark assigns one.
    next_attempt_at timestamptz                     -- set by a failed delivery: not retried before this time
)
-- The table is a queue: rows are inserted and deleted within moments, so it carries far more dead row versions
-- than live rows, and its live size swings from millions to zero.
--  * fillfactor: leaves room on each page for a row's updated version on the same page (a HOT update, no new
--    index entry). The MARK harvest updates every row once (measured on a 2-core machine with PostgreSQL 15,
--    draining 300,000 rows in batches of 1,000, mark then delete: 13.4 s at fillfactor 100, 5.8 s at 70). The
--    CURSOR harvest (the default) updates no row on the happy path, only a row whose delivery failed, so the room
--    is mostly unused there: 100 packs more rows per page. 70 stays the default until that is measured; a table
--    harvested only by CURSOR may take ALTER TABLE ... SET (fillfactor = 100) (it applies to pages filled later).
--  * autovacuum: the defaults vacuum a table once 20% of its (estimated) rows are dead and throttle the vacuum.
--    For a queue that estimate is meaningless: after a large backlog the table waits for hundreds of thousands
--    of dead rows, and in the meantime every read or mark walks over dead index entries at the head of the primary
--    key (measured with autovacuum off: the MARK drain rate fell from ~50k to ~6k rows/s, with 7 s marks). Fixed
--    thresholds and no cost delay keep vacuum frequent and quick; a fixed analyze threshold keeps the planner's
--    row estimates current. Deleted rows are dead rows under either harvest, so this advice stands.
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

-- The id default takes the writer's transaction id BEFORE the id: CASE evaluates its condition first, and
-- pg_current_xact_id() assigns the transaction id that the insert would assign a moment later anyway. So a
-- transaction that holds an id below a committed row's id took its transaction id earlier, which lets the CURSOR
-- harvest tell from a snapshot's transaction ids when an id it passed unseen can no longer commit (see
-- PostgresStore#read). The default also notes the id it took in the transaction's setting dev_outbox.id, for the
-- id guard below. The block is idempotent: it changes the default only when it is not this one yet (a table of an
-- earlier version: then it holds the table's lock for an instant; lock_timeout makes it give up rather than queue
-- behind a long transaction and stall every writer: run it again then).
DO $$
DECLARE
    seq text := pg_get_serial_sequence('${outbox_table}', 'id');
    lock_timeout text := current_setting('lock_timeout');
BEGIN
    IF seq IS NOT NULL AND NOT EXISTS (SELECT FROM pg_attrdef d
            JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
            WHERE d.adrelid = CAST('${outbox_table}' AS regclass) AND a.attname = 'id'
            AND regexp_replace(pg_get_expr(d.adbin, d.adrelid), '\s+', ' ', 'g')
                LIKE '%CASE WHEN (pg_current_xact_id() IS NOT NULL) THEN (set_config(''dev_outbox.id''::text, (nextval(%') THEN
        PERFORM set_config('lock_timeout', '5s', true);
        EXECUTE format('ALTER TABLE %s ALTER COLUMN id SET DEFAULT CASE WHEN pg_current_xact_id() IS NOT NULL'
            ' THEN CAST(set_config(''dev_outbox.id'', CAST(nextval(%L::regclass) AS text), true) AS bigint) END',
            '${outbox_table}', seq);
        PERFORM set_config('lock_timeout', lock_timeout, true);
    END IF;
END
$$;

-- Ids are the outbox's, never the writer's. An id a writer sets itself escapes the rule above (even one it took
-- with nextval), and one outside the sequence breaks the harvest: a negative id lies below every cursor and is never
-- read, an id far above the sequence moves the cursor past every row written after it. So the guard refuses an
-- INSERT (or COPY) that sets the id: the row's id must be the one the default just took in this transaction
-- (SQLSTATE 428C9, as for an identity column GENERATED ALWAYS). Triggers fire neither on a restore by pg_restore
-- (created after the data) nor on a logical replica (session_replication_role = replica).
CREATE OR REPLACE FUNCTION outbox_id_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM CAST(NULLIF(current_setting('dev_outbox.id', true), '') AS bigint) THEN
        RAISE EXCEPTION 'the outbox assigns its ids: leave the id column out of the INSERT into % (it set %)',
            TG_TABLE_NAME, NEW.id USING ERRCODE = 'generated_always', COLUMN = 'id', TABLE = TG_TABLE_NAME,
            SCHEMA = TG_TABLE_SCHEMA;
    END IF;
    RETURN NEW;
END
$$;

DO $$
DECLARE
    lock_timeout text := current_setting('lock_timeout');
BEGIN
    IF NOT EXISTS (SELECT FROM pg_trigger WHERE tgrelid = CAST('${outbox_table}' AS regclass)
            AND tgname = 'outbox_id_guard') THEN
        PERFORM set_config('lock_timeout', '5s', true);
        CREATE TRIGGER outbox_id_guard BEFORE INSERT ON ${outbox_table} FOR EACH ROW EXECUTE FUNCTION outbox_id_guard();
        PERFORM set_config('lock_timeout', lock_timeout, true);
    END IF;
END
$$;

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
    parked_at     timestamptz NOT NULL DEFAULT now(),
    message_id    uuid                              -- as in the outbox; replay keeps it
);

-- Storage fencing (the store's fencing setting, on by default): the outbox's leader epoch, in one row. A dispatcher
-- that becomes leader increments it (an UPDATE, which takes the row's lock) before it reads a row; every purge,
-- failure record, park and mark of a leader reads the row FOR SHARE in the same statement and changes nothing if
-- the epoch is no longer its own. So once an increment commits, a deposed leader's writes are refused.
CREATE TABLE IF NOT EXISTS ${outbox_leader_table} (
    id          smallint    PRIMARY KEY CHECK (id = 1),
    epoch       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()   -- when the current epoch was taken
);
