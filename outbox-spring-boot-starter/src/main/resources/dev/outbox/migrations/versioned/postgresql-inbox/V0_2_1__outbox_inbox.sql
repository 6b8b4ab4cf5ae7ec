-- dev.outbox's versioned migrations for PostgreSQL, the inbox (PostgresInbox): what each consumer has processed,
-- and what it gave up on. Its layout has not changed since it shipped. Idempotent. Placeholders (Flyway) / changelog
-- parameters (Liquibase): outbox_inbox_table, outbox_inbox_failed_table ("<table>_failed") and outbox_inbox_index
-- ("<table>_processed_at"), as they appear in SQL (the Spring Boot starter fills in "inbox", "inbox_failed" and
-- "inbox_processed_at" for Flyway unless set). Add the location classpath:dev/outbox/migrations/versioned/postgresql-inbox.

-- One row per (consumer, message id) processed, written in the consumer's own transaction together with its
-- effects. The primary key is what makes a redelivery a no-op; processed_at drives the retention purge.
CREATE TABLE IF NOT EXISTS ${outbox_inbox_table} (
    consumer     text        NOT NULL,
    message_id   uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);
CREATE INDEX IF NOT EXISTS ${outbox_inbox_index} ON ${outbox_inbox_table} (processed_at);

-- Messages whose handler kept failing: the consumer moved on, an operator decides (the record is still in Kafka
-- at topic/partition/offset while the topic retains it; key and value are copied here).
CREATE TABLE IF NOT EXISTS ${outbox_inbox_failed_table} (
    consumer     text        NOT NULL,
    message_id   uuid        NOT NULL,
    topic        text        NOT NULL,
    partition    integer     NOT NULL,
    "offset"     bigint      NOT NULL,
    key          text,
    value        bytea,
    attempts     integer     NOT NULL,
    reason       text        NOT NULL,
    failed_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);
