-- Moves the rows goharvest has not published yet into the new outbox, in their original order, atomically.
BEGIN;
INSERT INTO outbox (create_time, topic, key, value, header_names, header_values)
SELECT create_time, kafka_topic, kafka_key, convert_to(kafka_value, 'UTF8'), kafka_header_keys,
       ARRAY(SELECT convert_to(v, 'UTF8') FROM unnest(kafka_header_values) WITH ORDINALITY AS h(v, i) ORDER BY i)
FROM outbox_goharvest
ORDER BY id;
DELETE FROM outbox_goharvest;
COMMIT;
