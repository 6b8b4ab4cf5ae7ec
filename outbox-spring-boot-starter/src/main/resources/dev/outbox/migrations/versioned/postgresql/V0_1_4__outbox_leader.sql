-- dev.outbox's versioned migrations for PostgreSQL, step 4: storage fencing. The outbox's leader epoch, in one row
-- (the store's fencing setting, on by default). Idempotent. Placeholder: outbox_leader_table.
CREATE TABLE IF NOT EXISTS ${outbox_leader_table} (
    id          smallint    PRIMARY KEY CHECK (id = 1),
    epoch       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()   -- when the current epoch was taken
);
