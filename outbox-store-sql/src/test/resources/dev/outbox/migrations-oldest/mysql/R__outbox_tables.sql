-- The shipped migration as it was first released (git 7ebc89d): the oldest layout, the same DDL as that release's
-- schema.sql of outbox-store-mysql. Read by SchemaUpgradeTest and UpgradedSchemaContract (the starter: Flyway and
-- Liquibase run it with the placeholders) and by MySqlSchemaUpgradeTests (outbox-store-mysql: fills them in itself).
-- Do not change.
-- Outbox tables for dev.outbox (MySQL 8.0 or MariaDB 10.6 or newer), as a Flyway repeatable migration and a Liquibase SQL file.
-- Placeholders (Flyway) / changelog parameters (Liquibase): outbox_table and outbox_parked_table, the tables as
-- they appear in SQL (the Spring Boot starter fills both in from outbox.store.* for Flyway). The same DDL as the
-- store's schema.sql resource; every statement is idempotent.

-- One row per message. Applications insert (topic, `key`, value, headers) in their own transaction; the
-- dispatcher marks rows (leader_id), deletes delivered ones and resets failed ones. `key` is a reserved word in
-- MySQL: quote it with backticks in your own SQL. leader_id is NOT NULL, with 16 zero bytes for "unmarked", so
-- that marking a row rewrites it in place (a NULL column takes no space in the row, and growing the row on every
-- mark made marks two to three times slower).
CREATE TABLE IF NOT EXISTS ${outbox_table} (
    id          BIGINT        NOT NULL AUTO_INCREMENT,  -- delivery order; the mark walks the primary key from its head
    create_time TIMESTAMP(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6), -- stored in UTC; range ends 2038-01-19 on MySQL
    topic       VARCHAR(249)  NOT NULL,                 -- Kafka's longest topic name
    `key`       VARCHAR(1024) NOT NULL,                 -- records of one key are delivered in id order
    value       MEDIUMBLOB    NULL,                     -- NULL is a tombstone; at most 16 MiB - 1 bytes
    headers     JSON          NULL,                     -- NULL or [] for none, else [{"name": "...", "value": "<base64>" or null}, ...]
    leader_id   BINARY(16)    NOT NULL DEFAULT X'00000000000000000000000000000000', -- who marked it; zeros: nobody
    attempts    INT           NOT NULL DEFAULT 0,       -- failed deliveries so far
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Rows that will not be retried: delivery failed too often, the broker rejected them for good, or they could
-- not be read as messages. The dispatcher never reads this table; an operator lists and replays its rows
-- (MySqlStore.parked / replay), or deletes them.
CREATE TABLE IF NOT EXISTS ${outbox_parked_table} (
    id          BIGINT        NOT NULL,                 -- the row's id in the outbox when it was parked
    create_time TIMESTAMP(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    topic       VARCHAR(249)  NOT NULL,
    `key`       VARCHAR(1024) NOT NULL,
    value       MEDIUMBLOB    NULL,
    headers     JSON          NULL,
    leader_id   BINARY(16)    NOT NULL DEFAULT X'00000000000000000000000000000000',
    attempts    INT           NOT NULL,
    reason      TEXT          NOT NULL,                 -- why it was parked, for a human
    parked_at   TIMESTAMP(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
