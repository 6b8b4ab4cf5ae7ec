-- dev.outbox's versioned migrations for PostgreSQL, the per-key sequence (PostgresStore.Builder.keySequence(true),
-- outbox.store.key-sequence=true): the counter table "<table>_key_seq" the publisher numbers each (topic, key) from.
-- Idempotent. Placeholder (Flyway) / changelog parameter (Liquibase): outbox_key_seq_table, as it appears in SQL (the
-- Spring Boot starter fills in "<outbox table>_key_seq" for Flyway unless set). Add the location
-- classpath:dev/outbox/migrations/versioned/postgresql-key-sequence.

-- One row per (topic, key): the last number the key's records took (the header outbox-key-seq). A writer adds the
-- count of its messages of the key and reads the new value in one statement, before it inserts them, and holds the
-- row's lock until it commits:
--   INSERT INTO <table>_key_seq AS s (topic, key, seq) VALUES (?, ?, n) ON CONFLICT (topic, key)
--     DO UPDATE SET seq = s.seq + EXCLUDED.seq RETURNING seq
-- A key is indexed whole: one longer than about 2,700 bytes does not fit a B-tree entry and its write fails.
CREATE TABLE IF NOT EXISTS ${outbox_key_seq_table} (
    topic text   NOT NULL,
    key   text   NOT NULL,
    seq   bigint NOT NULL,
    PRIMARY KEY (topic, key)
);
