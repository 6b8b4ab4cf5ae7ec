-- dev.outbox's versioned migrations for MySQL and MariaDB, "not before" (MySqlStore.Builder.scheduling(true),
-- outbox.store.scheduling=true): the table "<table>_scheduled" delayed messages wait in until they are due.
-- Idempotent. Placeholder (Flyway) / changelog parameter (Liquibase): outbox_scheduled_table, as it appears in SQL
-- (the Spring Boot starter fills in "<outbox table>_scheduled" for Flyway unless set). Add the location
-- classpath:dev/outbox/migrations/versioned/mysql-scheduling.

-- One row per message that waits for its time: the outbox row's columns, and its due time in UTC on the database's
-- clock (DATETIME, so that times after 2038 fit). The leading dispatcher moves the due rows into the outbox in id
-- order, a row only when no earlier row of its (topic, key) still waits for its time. A writer in any language
-- schedules a message with
--   INSERT INTO <table>_scheduled (topic, `key`, value, headers, due_at)
--     VALUES ('orders', 'order-17', 'hello', NULL, UTC_TIMESTAMP(6) + INTERVAL 2 SECOND)
-- and, to keep a key's order, writes a message without a time here too (due_at = UTC_TIMESTAMP(6)) while its key has
-- a row here: SELECT 1 FROM <table>_scheduled WHERE topic = ? AND key_hash = UNHEX(SHA2(?, 256)) LIMIT 1
-- The key is found by its SHA-256 (a VARCHAR(1024) utf8mb4 key is too long for an InnoDB index).
CREATE TABLE IF NOT EXISTS ${outbox_scheduled_table} (
    id          BIGINT        NOT NULL AUTO_INCREMENT,  -- the order a key's rows are moved in
    due_at      DATETIME(6)   NOT NULL,                 -- UTC; not moved into the outbox before this time
    topic       VARCHAR(249)  NOT NULL,
    `key`       VARCHAR(1024) NOT NULL,
    value       MEDIUMBLOB    NULL,
    headers     JSON          NULL,
    message_id  BINARY(16)    NULL DEFAULT (UNHEX(CONCAT(LPAD(HEX(FLOOR(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000)), 12, '0'), '7', SUBSTR(HEX(RANDOM_BYTES(2)), 2, 3), HEX(128 | (ASCII(RANDOM_BYTES(1)) & 63)), HEX(RANDOM_BYTES(7))))),
    key_hash    BINARY(32)    AS (UNHEX(SHA2(`key`, 256))) STORED,
    PRIMARY KEY (id),
    KEY due (due_at),
    KEY topic_key (topic, key_hash, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
