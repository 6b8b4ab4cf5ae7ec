-- dev.outbox's versioned migrations for MySQL/MariaDB, step 2: message ids (#14). The message_id column of the
-- outbox (a version 7 UUID by default, for rows written by plain SQL) and of the parked table. Rows already in the
-- table keep a NULL message_id until they are marked: the mark assigns one before the row is published.
-- Placeholders: outbox_table, outbox_parked_table.
-- MySQL 8 has no ADD COLUMN IF NOT EXISTS: each column is added by a prepared statement chosen after a look at
-- information_schema (the placeholder's backticks removed, its database, if any, taken from it), so that the step is
-- idempotent. ALGORITHM = INSTANT only changes the table's metadata (no row is copied, writers wait only for the
-- metadata lock's instant); the server refuses, rather than copy the table, where it cannot.

SET @outbox_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE ${outbox_table} ADD COLUMN message_id BINARY(16) NULL, ALGORITHM = INSTANT', 'DO 0')
    FROM information_schema.columns
    WHERE table_schema = IF(LOCATE('.', REPLACE('${outbox_table}', '`', '')) > 0, SUBSTRING_INDEX(REPLACE('${outbox_table}', '`', ''), '.', 1), DATABASE())
      AND table_name = SUBSTRING_INDEX(REPLACE('${outbox_table}', '`', ''), '.', -1) AND column_name = 'message_id');
PREPARE outbox_ddl FROM @outbox_ddl;
EXECUTE outbox_ddl;
DEALLOCATE PREPARE outbox_ddl;
ALTER TABLE ${outbox_table} ALTER COLUMN message_id SET DEFAULT (UNHEX(CONCAT(LPAD(HEX(FLOOR(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000)), 12, '0'), '7', SUBSTR(HEX(RANDOM_BYTES(2)), 2, 3), HEX(128 | (ASCII(RANDOM_BYTES(1)) & 63)), HEX(RANDOM_BYTES(7)))));

SET @outbox_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE ${outbox_parked_table} ADD COLUMN message_id BINARY(16) NULL, ALGORITHM = INSTANT', 'DO 0')
    FROM information_schema.columns
    WHERE table_schema = IF(LOCATE('.', REPLACE('${outbox_parked_table}', '`', '')) > 0, SUBSTRING_INDEX(REPLACE('${outbox_parked_table}', '`', ''), '.', 1), DATABASE())
      AND table_name = SUBSTRING_INDEX(REPLACE('${outbox_parked_table}', '`', ''), '.', -1) AND column_name = 'message_id');
PREPARE outbox_ddl FROM @outbox_ddl;
EXECUTE outbox_ddl;
DEALLOCATE PREPARE outbox_ddl;
