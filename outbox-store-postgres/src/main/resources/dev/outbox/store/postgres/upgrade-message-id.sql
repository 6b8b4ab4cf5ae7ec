-- Upgrades outbox tables created before message ids (dev.outbox 0.1) in place. PostgresStore.createSchema() runs
-- it when the outbox table has no message_id column; to migrate by hand, run it once (after the function from
-- schema.sql). Every statement only changes the catalog: no row is rewritten, and each one holds the table's lock
-- for an instant (lock_timeout makes it give up, rather than queue behind a long transaction and stall every
-- writer; run it again then). Rows already in the table keep a NULL message_id until they are marked: the mark
-- assigns one and stores it before the row is published, so it is stable from then on.
SET LOCAL lock_timeout = '5s';
ALTER TABLE ${outbox} ADD COLUMN IF NOT EXISTS message_id uuid;
ALTER TABLE ${outbox} ALTER COLUMN message_id SET DEFAULT ${uuidv7}();
ALTER TABLE ${parked} ADD COLUMN IF NOT EXISTS message_id uuid;
