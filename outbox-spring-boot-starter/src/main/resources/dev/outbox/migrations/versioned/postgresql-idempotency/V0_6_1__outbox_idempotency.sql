-- dev.outbox's versioned migrations for PostgreSQL, idempotency keys (PostgresStore.Builder.idempotencyKeys(retention),
-- outbox.store.idempotency.retention): the table "<table>_idempotency" of the keys written within the retention.
-- Idempotent. Placeholder (Flyway) / changelog parameter (Liquibase): outbox_idempotency_table, as it appears in SQL
-- (the Spring Boot starter fills in "<outbox table>_idempotency" for Flyway unless set). Add the location
-- classpath:dev/outbox/migrations/versioned/postgresql-idempotency.

-- One row per idempotency key written within the retention (one outbox, all topics). A writer claims the key, then
-- inserts the outbox row, in one transaction; the claim writes the key only if it is new or its entry has expired:
--   INSERT INTO <table>_idempotency AS i (idempotency_key, created_at) VALUES (?, now())
--     ON CONFLICT (idempotency_key) DO UPDATE SET created_at = now()
--     WHERE i.created_at < now() - interval '<retention>'
-- 1 row: claimed, write the message. 0 rows: a duplicate within the retention, write nothing.
-- No index on created_at: the leader's sweep (DELETE of up to n expired entries, every minute) scans the table, which
-- holds only the keys of one retention.
CREATE TABLE IF NOT EXISTS ${outbox_idempotency_table} (
    idempotency_key text        NOT NULL PRIMARY KEY,
    created_at      timestamptz NOT NULL
);
