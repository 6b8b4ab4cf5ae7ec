-- The outbox table's id guard for dev.outbox (MySQL 8.0.29 or MariaDB 10.6 or newer), as a Flyway repeatable migration
-- (after R__outbox_tables.sql) and a Liquibase SQL file. Placeholders (Flyway) / changelog parameters (Liquibase):
-- outbox_table, and outbox_id_guard, the trigger's name ("<table>_ids"; the Spring Boot starter fills both in from
-- outbox.store.* for Flyway). The same DDL as the store's id-guard.sql resource; idempotent.

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
