-- The idempotency keys of dev.outbox (outbox-store-postgres), for a store built with idempotencyKeys(retention):
-- PostgresStore.idempotencySchemaSql() renders this file, PostgresStore.createSchema() applies it when the option is
-- on. ${idempotency} stands for "<table>_idempotency", quoted and schema-qualified like the outbox. Idempotent.

-- One row per idempotency key written within the retention (one outbox, all topics). A writer claims the key, then
-- inserts the outbox row, in one transaction; the claim writes the key only if it is new or its entry has expired:
--   INSERT INTO <table>_idempotency AS i (idempotency_key, created_at) VALUES (?, now())
--     ON CONFLICT (idempotency_key) DO UPDATE SET created_at = now()
--     WHERE i.created_at < now() - interval '<retention>'
-- 1 row: claimed, write the message. 0 rows: a duplicate within the retention, write nothing.
-- No index on created_at: the leader's sweep (DELETE of up to n expired entries, every minute) scans the table, which
-- holds only the keys of one retention.
CREATE TABLE IF NOT EXISTS ${idempotency} (
    idempotency_key text        NOT NULL PRIMARY KEY,
    created_at      timestamptz NOT NULL
);
