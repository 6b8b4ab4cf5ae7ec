-- dev.outbox's versioned migrations for MySQL and MariaDB, the per-key sequence (MySqlStore.Builder.keySequence(true),
-- outbox.store.key-sequence=true): the counter table "<table>_key_seq" the publisher numbers each (topic, key) from.
-- Idempotent. Placeholder (Flyway) / changelog parameter (Liquibase): outbox_key_seq_table, as it appears in SQL (the
-- Spring Boot starter fills in "<outbox table>_key_seq" for Flyway unless set). Add the location
-- classpath:dev/outbox/migrations/versioned/mysql-key-sequence.

-- One row per (topic, key): the last number the key's records took (the header outbox-key-seq). The key is found by
-- its SHA-256 (a VARCHAR(1024) utf8mb4 key is too long for an InnoDB index); `key` is kept for people. A writer adds
-- the count n of its messages of the key, before it inserts them, and holds the row's lock until it commits,
--   INSERT INTO <table>_key_seq (topic, key_hash, `key`, seq)
--     VALUES (?, UNHEX(SHA2(CONVERT(? USING utf8mb4), 256)), ?, LAST_INSERT_ID(n))
--     ON DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq + n)
-- then reads the new value on the same connection: SELECT LAST_INSERT_ID()
CREATE TABLE IF NOT EXISTS ${outbox_key_seq_table} (
    topic    VARCHAR(249)  NOT NULL,
    key_hash BINARY(32)    NOT NULL,                    -- UNHEX(SHA2(CONVERT(`key` USING utf8mb4), 256))
    `key`    VARCHAR(1024) NOT NULL,
    seq      BIGINT        NOT NULL,
    PRIMARY KEY (topic, key_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
