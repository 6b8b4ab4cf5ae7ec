-- dev.outbox's versioned migrations for MySQL/MariaDB, the inbox (MySqlInbox): what each consumer has processed,
-- and what it gave up on. Its layout has not changed since it shipped. Idempotent. Placeholders (Flyway) / changelog
-- parameters (Liquibase): outbox_inbox_table and outbox_inbox_failed_table ("<table>_failed"), as they appear in SQL
-- (the Spring Boot starter fills in `inbox` and `inbox_failed` for Flyway unless set). Add the location
-- classpath:dev/outbox/migrations/versioned/mysql-inbox.

-- One row per (consumer, message id) processed, written in the consumer's own transaction together with its
-- effects. The primary key is what makes a redelivery a no-op; processed_at drives the retention purge.
CREATE TABLE IF NOT EXISTS ${outbox_inbox_table} (
    consumer     VARCHAR(200) NOT NULL,
    message_id   BINARY(16)   NOT NULL,
    processed_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (consumer, message_id),
    KEY processed_at (processed_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Messages whose handler kept failing: the consumer moved on, an operator decides (the record is still in Kafka
-- at topic/partition/offset while the topic retains it; key and value are copied here).
CREATE TABLE IF NOT EXISTS ${outbox_inbox_failed_table} (
    consumer     VARCHAR(200) NOT NULL,
    message_id   BINARY(16)   NOT NULL,
    topic        VARCHAR(249) NOT NULL,
    `partition`  INT          NOT NULL,
    `offset`     BIGINT       NOT NULL,
    `key`        TEXT         NULL,
    value        LONGBLOB     NULL,
    attempts     INT          NOT NULL,
    reason       TEXT         NOT NULL,
    failed_at    TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (consumer, message_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
