-- The per-key sequence's counters for dev.outbox (outbox-store-mysql), for a store built with keySequence(true):
-- MySqlStore.keySequenceSchemaSql() renders this file, MySqlStore.createSchema() applies it when the key sequence
-- is on. ${keySeq} stands for "<table>_key_seq", quoted and optionally database-qualified like the outbox.
-- Idempotent. Statements end with ";" at the end of a line.

-- One row per (topic, key): the last number the key's records took (the header outbox-key-seq). The key is found by
-- its SHA-256 (a VARCHAR(1024) utf8mb4 key is too long for an InnoDB index); `key` is kept for people. A writer adds
-- the count n of its messages of the key, before it inserts them, and holds the row's lock until it commits,
--   INSERT INTO <table>_key_seq (topic, key_hash, `key`, seq)
--     VALUES (?, UNHEX(SHA2(CONVERT(? USING utf8mb4), 256)), ?, LAST_INSERT_ID(n))
--     ON DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq + n)
-- then reads the new value on the same connection: SELECT LAST_INSERT_ID()
CREATE TABLE IF NOT EXISTS ${keySeq} (
    topic    VARCHAR(249)  NOT NULL,
    key_hash BINARY(32)    NOT NULL,                    -- UNHEX(SHA2(CONVERT(`key` USING utf8mb4), 256))
    `key`    VARCHAR(1024) NOT NULL,
    seq      BIGINT        NOT NULL,
    PRIMARY KEY (topic, key_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
