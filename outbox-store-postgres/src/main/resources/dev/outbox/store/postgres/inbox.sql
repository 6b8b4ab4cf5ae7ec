-- Inbox tables for dev.outbox (outbox-store-postgres): what each consumer has processed, and what it gave up on.
-- ${inbox} and ${failed} stand for the configured table and "<table>_failed", quoted and schema-qualified;
-- PostgresInbox.schemaSql() renders this file, PostgresInbox.createSchema() applies it. Idempotent.

-- One row per (consumer, message id) processed, written in the consumer's own transaction together with its
-- effects. The primary key is what makes a redelivery a no-op; processed_at drives the retention purge.
CREATE TABLE IF NOT EXISTS ${inbox} (
    consumer     text        NOT NULL,
    message_id   uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);
CREATE INDEX IF NOT EXISTS ${inbox_index} ON ${inbox} (processed_at);

-- Messages whose handler kept failing: the consumer moved on, an operator decides (the record is still in Kafka
-- at topic/partition/offset while the topic retains it; key and value are copied here).
CREATE TABLE IF NOT EXISTS ${failed} (
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
