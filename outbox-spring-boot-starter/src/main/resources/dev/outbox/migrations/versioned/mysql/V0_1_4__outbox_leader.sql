-- dev.outbox's versioned migrations for MySQL/MariaDB, step 4: storage fencing. The outbox's leader epoch, in one
-- row (the store's fencing setting, on by default). Idempotent. Placeholder: outbox_leader_table.
CREATE TABLE IF NOT EXISTS ${outbox_leader_table} (
    id          TINYINT       NOT NULL,                 -- always 1
    epoch       BIGINT        NOT NULL,
    acquired_at TIMESTAMP(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6), -- when the current epoch was taken
    PRIMARY KEY (id)
) ENGINE = InnoDB;
