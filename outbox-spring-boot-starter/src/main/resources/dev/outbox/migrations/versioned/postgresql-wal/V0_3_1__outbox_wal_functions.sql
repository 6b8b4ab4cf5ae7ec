-- dev.outbox's versioned migrations for PostgreSQL, the WAL harvest's writer functions (outbox.store.wal.url): a
-- writer in any language emits a message with SELECT outbox_emit(topic, key, value) in its own transaction (see
-- docs/stores/postgres.md). The same DDL as the store's wal.sql resource; their layout has not changed since they
-- shipped. Idempotent (CREATE OR REPLACE); needs the message-id function of step 0.1.2 (the location
-- classpath:dev/outbox/migrations/versioned/postgresql). Placeholders (Flyway) / changelog parameters (Liquibase):
-- outbox_wal_encode and outbox_emit, the functions "<table>_wal_encode" and "<table>_emit" as they appear in SQL, and
-- outbox_wal_prefix, the logical messages' prefix "dev.outbox:<table>" (or "dev.outbox:<schema>.<table>"), without
-- quotes (the Spring Boot starter fills them in from outbox.store.* for Flyway unless set). Add the location
-- classpath:dev/outbox/migrations/versioned/postgresql-wal.

-- The content of one message in format version 1. The arguments are those of the outbox table's columns, so
-- parked rows can be re-emitted with
--     SELECT outbox_emit(topic, key, value, header_names, header_values, message_id) FROM outbox_parked WHERE ...
-- A NULL message_id (a row written before message ids) gets a fresh one. Raises invalid_parameter_value (22023)
-- naming the argument for a NULL topic or key, header arrays that are NULL, multi-dimensional or of different
-- lengths, and a NULL or empty header name.
CREATE OR REPLACE FUNCTION ${outbox_wal_encode}(topic text, key text, value bytea, header_names text[] DEFAULT '{}',
        header_values bytea[] DEFAULT '{}', message_id uuid DEFAULT outbox_uuidv7())
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
        || uuid_send(COALESCE(message_id, outbox_uuidv7()))
        || int4send(octet_length(topic_bytes)) || topic_bytes
        || int4send(octet_length(key_bytes)) || key_bytes
        || CASE WHEN value IS NULL THEN int4send(-1) ELSE int4send(octet_length(value)) || value END
        || int4send(cardinality(header_names)) || COALESCE(headers, ''::bytea);
END
$$;

-- Emits one message for the harvest, in the caller's transaction: it is delivered if, and only if, the transaction
-- commits. Returns the message's position in the log. Arguments and errors as ${outbox_wal_encode}.
CREATE OR REPLACE FUNCTION ${outbox_emit}(topic text, key text, value bytea, header_names text[] DEFAULT '{}',
        header_values bytea[] DEFAULT '{}', message_id uuid DEFAULT outbox_uuidv7())
    RETURNS pg_lsn LANGUAGE sql VOLATILE AS $$
    SELECT pg_logical_emit_message(true, '${outbox_wal_prefix}',
        ${outbox_wal_encode}(topic, key, value, header_names, header_values, message_id))
$$;
