-- dev.outbox's versioned migrations for PostgreSQL, step 5: the id default that takes the writer's transaction id
-- first (which the cursor harvest's late-commit rule needs) and the id guard that refuses an id set by a writer
-- (#42). Idempotent (the DO blocks change nothing when the default and the trigger are there). Placeholder:
-- outbox_table. Sent as one statement by Liquibase (its splitter would cut the DO blocks at their semicolons).

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
