-- dev.outbox's versioned migrations for PostgreSQL, step 3: per-key retries. A failed delivery records when the
-- key's head record may be retried. Idempotent; only changes the catalog, holding the table's lock for an instant
-- (lock_timeout: see step 2). Placeholder: outbox_table.
SET LOCAL lock_timeout = '5s';
ALTER TABLE ${outbox_table} ADD COLUMN IF NOT EXISTS next_attempt_at timestamptz;
