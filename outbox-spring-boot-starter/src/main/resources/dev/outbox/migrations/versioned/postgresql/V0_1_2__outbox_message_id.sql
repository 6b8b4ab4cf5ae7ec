-- dev.outbox's versioned migrations for PostgreSQL, step 2: message ids (#14). The message-id function, the
-- message_id column of the outbox (with the function as its default) and of the parked table. Idempotent. Each
-- ALTER only changes the catalog (no row is rewritten) and holds the table's lock for an instant; lock_timeout makes
-- it give up rather than queue behind a long transaction and stall every writer (run the migration again then).
-- Rows already in the table keep a NULL message_id until they are marked: the mark assigns one before the row is
-- published. Placeholders: outbox_table, outbox_parked_table.

-- A time-ordered UUID (version 7, RFC 9562): 48 bits of Unix time in milliseconds, then random bits. The
-- publisher assigns message ids in Java; this function is the column default for rows written by plain SQL.
CREATE OR REPLACE FUNCTION outbox_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;

SET LOCAL lock_timeout = '5s';
ALTER TABLE ${outbox_table} ADD COLUMN IF NOT EXISTS message_id uuid;
ALTER TABLE ${outbox_table} ALTER COLUMN message_id SET DEFAULT outbox_uuidv7();
ALTER TABLE ${outbox_parked_table} ADD COLUMN IF NOT EXISTS message_id uuid;
