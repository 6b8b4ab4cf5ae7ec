-- dev.outbox's versioned migrations for MySQL 8.0.29 or MariaDB 10.6 or newer, step 5: the id guard (#42), the
-- trigger that refuses a row whose writer set an id below 1. Idempotent. Placeholders: outbox_table, outbox_id_guard
-- (the trigger, "<table>_ids"). One compound statement: Liquibase sends it whole.

-- Ids are the outbox's, never the writer's: leave the id column out of the INSERT. A writer's id below 1 lies below
-- every cursor and would never be published: this trigger refuses the row (SQLSTATE 45000, error 1644; the insert is
-- rolled back). An id above the counter is let through: AUTO_INCREMENT moves on past it, so every later row takes a
-- higher id and is published as before. It fires AFTER the insert, when the id is known: MariaDB fills an
-- INSERT ... SELECT with NULLs when the table has a BEFORE INSERT trigger. It is one compound statement: with the
-- mysql client, set another delimiter around it (DELIMITER //, the statement, //, DELIMITER ;). Creating a trigger
-- needs the TRIGGER privilege and, where binary logging is on, SUPER or log_bin_trust_function_creators = 1 (safe
-- with binlog_format = ROW).
CREATE TRIGGER IF NOT EXISTS ${outbox_id_guard} AFTER INSERT ON ${outbox_table} FOR EACH ROW BEGIN
    IF NEW.id < 1 THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'the outbox assigns its ids: leave the id column out of the INSERT';
    END IF;
END
