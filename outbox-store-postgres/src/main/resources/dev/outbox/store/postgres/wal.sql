-- The WAL harvest's writer functions for dev.outbox (outbox-store-postgres); needs PostgreSQL 13 or newer and, to
-- be harvested, wal_level = logical. Apply after schema.sql (the message-id function comes from there).
-- ${wal_encode} and ${emit} stand for the functions "<table>_wal_encode" and "<table>_emit" in the outbox's schema,
-- quoted and schema-qualified; ${uuidv7} for the message-id function; ${prefix} for the logical message prefix the
-- harvest reads, 'dev.outbox:<schema>.<table>' (or 'dev.outbox:<table>' without a schema), as a string literal.
-- WalSql.render renders this file. Every statement is idempotent (CREATE OR REPLACE).
--
-- In WAL mode a message is not a row: it is a transactional logical message in the write-ahead log, which commits
-- or rolls back with the writer's transaction and is streamed to the harvest, in commit order, from a logical
-- replication slot. A writer in any language emits one with plain SQL, in its own transaction:
--
--     SELECT outbox_emit('orders', 'order-17', 'hello'::bytea);                      -- no headers
--     SELECT outbox_emit('orders', 'order-17', NULL);                                -- a tombstone
--     SELECT outbox_emit(topic => 'orders', key => 'order-17', value => 'hello'::bytea,
--                        header_names => ARRAY['trace'], header_values => ARRAY['abc'::bytea]);
--
-- Messages emitted by one transaction are delivered in the order it emitted them; transactions in commit order.
--
-- Privileges: calling these functions needs EXECUTE on them, which PostgreSQL grants to PUBLIC on every new
-- function (REVOKE it, and GRANT it to the writers' roles, to restrict them), and on pg_logical_emit_message,
-- which PUBLIC has by default too. Note that this means any role that can connect to the database can emit a
-- message with the outbox's prefix, with or without these functions: unlike an INSERT into the outbox table, a
-- logical message needs no privilege on any table.
--
-- The content of each logical message, format version 1 (dev.outbox.store.postgres.WalCodec reads and writes it;
-- all integers are signed 32-bit big-endian, as int4send writes them; strings are UTF-8 without a terminator):
--
--     byte    format version: 1
--     16 B    message id (uuid_send: the UUID's 16 bytes in order)
--     int32   topic length in bytes, then the topic
--     int32   key length in bytes, then the key
--     int32   value length in bytes, or -1 for a tombstone (a NULL value); then the value's bytes
--     int32   header count; then per header, in order (names may repeat):
--               int32 name length in bytes (at least 1), then the name
--               int32 value length in bytes, or -1 for a NULL value; then the value's bytes
--
-- Nothing may follow the last header. A message the harvest cannot decode or validate (a blank topic, a key longer
-- than the store's maxKeyLength, ...) is kept in the parked table with the reason, never dropped.

-- The content of one message in format version 1. The arguments are those of the outbox table's columns, so
-- parked rows can be re-emitted with
--     SELECT outbox_emit(topic, key, value, header_names, header_values, message_id) FROM outbox_parked WHERE ...
-- A NULL message_id (a row written before message ids) gets a fresh one. Raises invalid_parameter_value (22023)
-- naming the argument for a NULL topic or key, header arrays that are NULL, multi-dimensional or of different
-- lengths, and a NULL or empty header name.
CREATE OR REPLACE FUNCTION ${wal_encode}(topic text, key text, value bytea, header_names text[] DEFAULT '{}',
        header_values bytea[] DEFAULT '{}', message_id uuid DEFAULT ${uuidv7}())
    RETURNS bytea LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS $$
DECLARE
    topic_bytes bytea;
    key_bytes bytea;
    headers bytea;
    bad bigint;
BEGIN
    IF topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF key IS NULL THEN
        RAISE EXCEPTION 'key must not be NULL (topic %)', topic USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF header_names IS NULL OR header_values IS NULL THEN
        RAISE EXCEPTION 'header_names and header_values must not be NULL (use empty arrays for no headers)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF array_ndims(header_names) > 1 OR array_ndims(header_values) > 1 THEN
        RAISE EXCEPTION 'header_names and header_values must be one-dimensional arrays'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(header_names) <> cardinality(header_values) THEN
        RAISE EXCEPTION 'header_names has % elements but header_values has %', cardinality(header_names),
            cardinality(header_values) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT h.i INTO bad FROM unnest(header_names) WITH ORDINALITY AS h(n, i) WHERE h.n IS NULL OR h.n = ''
        ORDER BY h.i LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'header_names[%] is NULL or empty', bad USING ERRCODE = 'invalid_parameter_value';
    END IF;
    topic_bytes := convert_to(topic, 'UTF8');
    key_bytes := convert_to(key, 'UTF8');
    SELECT string_agg(int4send(octet_length(h.n)) || h.n
            || CASE WHEN h.v IS NULL THEN int4send(-1) ELSE int4send(octet_length(h.v)) || h.v END,
            ''::bytea ORDER BY h.i)
        INTO headers
        FROM (SELECT convert_to(u.n, 'UTF8') AS n, u.v, u.i
              FROM unnest(header_names, header_values) WITH ORDINALITY AS u(n, v, i)) AS h;
    RETURN decode('01', 'hex')
        || uuid_send(COALESCE(message_id, ${uuidv7}()))
        || int4send(octet_length(topic_bytes)) || topic_bytes
        || int4send(octet_length(key_bytes)) || key_bytes
        || CASE WHEN value IS NULL THEN int4send(-1) ELSE int4send(octet_length(value)) || value END
        || int4send(cardinality(header_names)) || COALESCE(headers, ''::bytea);
END
$$;

-- Emits one message for the harvest, in the caller's transaction: it is delivered if, and only if, the transaction
-- commits. Returns the message's position in the log. Arguments and errors as ${wal_encode}.
CREATE OR REPLACE FUNCTION ${emit}(topic text, key text, value bytea, header_names text[] DEFAULT '{}',
        header_values bytea[] DEFAULT '{}', message_id uuid DEFAULT ${uuidv7}())
    RETURNS pg_lsn LANGUAGE sql VOLATILE AS $$
    SELECT pg_logical_emit_message(true, ${prefix},
        ${wal_encode}(topic, key, value, header_names, header_values, message_id))
$$;
