-- The per-key sequence's counters for dev.outbox (outbox-store-h2), for a store built with keySequence(true):
-- H2Store.keySequenceSchemaSql() renders this file, H2Store.createSchema() applies it when the key sequence is on.
-- ${keySeq} stands for "<table>_key_seq", quoted and optionally schema-qualified like the outbox. Idempotent.
-- Statements end with ";" at the end of a line.

-- One row per (topic, key): the last number the key's records took (the header outbox-key-seq). A writer adds the
-- count of its messages of the key (a MERGE) and reads the new value, before it inserts them, and holds the row's
-- lock until it commits.
CREATE TABLE IF NOT EXISTS ${keySeq} (
    topic CHARACTER VARYING NOT NULL,
    "key" CHARACTER VARYING NOT NULL,
    seq   BIGINT NOT NULL,
    PRIMARY KEY (topic, "key")
);
