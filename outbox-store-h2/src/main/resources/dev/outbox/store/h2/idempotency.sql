-- The idempotency keys of dev.outbox (outbox-store-h2), for a store built with idempotencyKeys(retention):
-- H2Store.idempotencySchemaSql() renders this file, H2Store.createSchema() applies it when the option is on.
-- ${idempotency} stands for "<table>_idempotency", quoted and optionally schema-qualified like the outbox.
-- Idempotent. Statements end with ";" at the end of a line.

-- One row per idempotency key written within the retention (one outbox, all topics). A writer claims the key (a
-- MERGE that inserts it, or renews it if its entry has expired: update count 1 = claimed, 0 = a duplicate within the
-- retention), then inserts the outbox row, in one transaction.
CREATE TABLE IF NOT EXISTS ${idempotency} (
    idempotency_key CHARACTER VARYING(200) NOT NULL PRIMARY KEY,
    created_at      TIMESTAMP WITH TIME ZONE NOT NULL
);
