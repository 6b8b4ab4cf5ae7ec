-- An application's own versioned migration, applied before the outbox's versioned ones existed: the outbox's
-- versions (0.x) then come below an applied one, which Flyway runs only with outOfOrder (UpgradedSchemaContract).
CREATE TABLE ${app_table} (id integer PRIMARY KEY);
