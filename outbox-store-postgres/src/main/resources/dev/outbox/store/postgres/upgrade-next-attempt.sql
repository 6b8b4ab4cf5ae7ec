-- Upgrades outbox tables created before per-key retries (before next_attempt_at) in place. PostgresStore.createSchema()
-- runs it when the outbox table has no next_attempt_at column; to migrate by hand, run it once. The statement only
-- changes the catalog: no row is rewritten, and it holds the table's lock for an instant (lock_timeout makes it give
-- up, rather than queue behind a long transaction and stall every writer; run it again then).
SET LOCAL lock_timeout = '5s';
ALTER TABLE ${outbox} ADD COLUMN IF NOT EXISTS next_attempt_at timestamptz;
