-- Upgrades outbox tables created before per-key retries (before next_attempt_at) in place. MySqlStore.createSchema()
-- runs it when the outbox table has no next_attempt_at column; to migrate by hand, run it once. ALGORITHM=INSTANT
-- only changes the table's metadata (MySQL 8.0.12+, MariaDB 10.3+): no row is copied and writers are not blocked
-- beyond the instant of the metadata lock; the server refuses, rather than copy the table, where it cannot.
ALTER TABLE ${outbox} ADD COLUMN next_attempt_at TIMESTAMP(6) NULL DEFAULT NULL, ALGORITHM = INSTANT;
