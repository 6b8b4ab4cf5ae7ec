-- dev.outbox's versioned migrations for MySQL and MariaDB, idempotency keys (MySqlStore.Builder.idempotencyKeys(
-- retention), outbox.store.idempotency.retention): the table "<table>_idempotency" of the keys written within the
-- retention. Idempotent. Placeholder (Flyway) / changelog parameter (Liquibase): outbox_idempotency_table, as it
-- appears in SQL (the Spring Boot starter fills in "<outbox table>_idempotency" for Flyway unless set). Add the
-- location classpath:dev/outbox/migrations/versioned/mysql-idempotency.

-- One row per idempotency key written within the retention (one outbox, all topics). A writer claims the key, then
-- inserts the outbox row, in one transaction. The claim writes the key only if it is new or its entry has expired,
-- and leaves in LAST_INSERT_ID() 1 if it claimed the key, 0 if the key is a duplicate within the retention
-- (the affected-rows count cannot tell: with the drivers' default CLIENT_FOUND_ROWS, both a new key and an
-- unchanged duplicate count 1):
--   INSERT INTO <table>_idempotency (idempotency_key, created_at) VALUES (?, IF(LAST_INSERT_ID(1), NOW(6), NULL))
--     ON DUPLICATE KEY UPDATE created_at = IF(LAST_INSERT_ID(created_at < NOW(6) - INTERVAL <retention µs>
--     MICROSECOND), NOW(6), created_at)
--   SELECT LAST_INSERT_ID()
-- 1: claimed, write the message. 0: a duplicate, write nothing. The key compares byte for byte (utf8mb4_bin).
CREATE TABLE IF NOT EXISTS ${outbox_idempotency_table} (
    idempotency_key VARCHAR(200) NOT NULL,
    created_at      DATETIME(6)  NOT NULL,
    PRIMARY KEY (idempotency_key),
    KEY (created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
