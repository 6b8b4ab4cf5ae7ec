-- Upgrades outbox tables created before message ids (dev.outbox 0.1) in place. MySqlStore.createSchema() runs it
-- when the outbox table has no message_id column; to migrate by hand, run it once. ALGORITHM=INSTANT only changes
-- the table's metadata (MySQL 8.0.12+, MariaDB 10.3+): no row is copied and writers are not blocked beyond the
-- instant of the metadata lock; the server refuses, rather than copy the table, where it cannot. Rows already in
-- the table keep a NULL message_id until they are marked: the mark assigns one and stores it before the row is
-- published, so it is stable from then on.
ALTER TABLE ${outbox} ADD COLUMN message_id BINARY(16) NULL, ALGORITHM = INSTANT;
ALTER TABLE ${outbox} ALTER COLUMN message_id SET DEFAULT (${uuidv7});
ALTER TABLE ${parked} ADD COLUMN message_id BINARY(16) NULL, ALGORITHM = INSTANT;
