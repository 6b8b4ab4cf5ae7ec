-- The per-key sequence's counters for dev.outbox (outbox-store-postgres), for a store built with keySequence(true):
-- PostgresStore.keySequenceSchemaSql() renders this file, PostgresStore.createSchema() applies it when the key
-- sequence is on. ${keySeq} stands for "<table>_key_seq", quoted and schema-qualified like the outbox. Idempotent.

-- One row per (topic, key): the last number the key's records took (the header outbox-key-seq). A writer adds the
-- count of its messages of the key and reads the new value in one statement, before it inserts them, and holds the
-- row's lock until it commits:
--   INSERT INTO <table>_key_seq AS s (topic, key, seq) VALUES (?, ?, n) ON CONFLICT (topic, key)
--     DO UPDATE SET seq = s.seq + EXCLUDED.seq RETURNING seq
-- A key is indexed whole: one longer than about 2,700 bytes does not fit a B-tree entry and its write fails.
CREATE TABLE IF NOT EXISTS ${keySeq} (
    topic text   NOT NULL,
    key   text   NOT NULL,
    seq   bigint NOT NULL,
    PRIMARY KEY (topic, key)
);
