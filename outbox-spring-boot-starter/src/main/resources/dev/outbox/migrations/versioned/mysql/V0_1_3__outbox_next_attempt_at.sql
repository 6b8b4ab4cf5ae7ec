-- dev.outbox's versioned migrations for MySQL/MariaDB, step 3: per-key retries. A failed delivery records when the
-- key's head record may be retried. Placeholder: outbox_table.
-- MySQL 8 has no ADD COLUMN IF NOT EXISTS: each column is added by a prepared statement chosen after a look at
-- information_schema (the placeholder's backticks removed, its database, if any, taken from it), so that the step is
-- idempotent. ALGORITHM = INSTANT only changes the table's metadata (no row is copied, writers wait only for the
-- metadata lock's instant); the server refuses, rather than copy the table, where it cannot.

SET @outbox_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE ${outbox_table} ADD COLUMN next_attempt_at TIMESTAMP(6) NULL DEFAULT NULL, ALGORITHM = INSTANT', 'DO 0')
    FROM information_schema.columns
    WHERE table_schema = IF(LOCATE('.', REPLACE('${outbox_table}', '`', '')) > 0, SUBSTRING_INDEX(REPLACE('${outbox_table}', '`', ''), '.', 1), DATABASE())
      AND table_name = SUBSTRING_INDEX(REPLACE('${outbox_table}', '`', ''), '.', -1) AND column_name = 'next_attempt_at');
PREPARE outbox_ddl FROM @outbox_ddl;
EXECUTE outbox_ddl;
DEALLOCATE PREPARE outbox_ddl;
