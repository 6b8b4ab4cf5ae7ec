package dev.outbox.benchmarks.peers.debezium;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.ChangeEvent;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Debezium as a platform team would embed it, in a child JVM: the embedded engine with the Postgres connector
 * ({@code pgoutput}) capturing the outbox table {@code peer_outbox}, the outbox event router transform, and a
 * handler that sends every routed record to Kafka and marks a batch processed only once Kafka acknowledged all of
 * it, as Debezium Server's Kafka sink does. {@link #settings} are printed by the parent with where each came from.
 * Prints {@code READY} once the connector's task has started; {@code QUIT} on standard input closes it.
 */
public final class DebeziumPeer {
    private DebeziumPeer() {
    }

    /** The connector's and engine's settings: {name, value, where it came from}. */
    public static List<String[]> settings(String host, int port, String user, String database, String offsets,
                                          String slot) {
        List<String[]> s = new ArrayList<>();
        s.add(new String[] {"name", "peer-debezium", "required"});
        s.add(new String[] {"connector.class", "io.debezium.connector.postgresql.PostgresConnector", "required"});
        s.add(new String[] {"plugin.name", "pgoutput", "Postgres connector docs: the built-in plugin (default)"});
        s.add(new String[] {"database.hostname", host, "the benchmark's server"});
        s.add(new String[] {"database.port", Integer.toString(port), "the benchmark's server"});
        s.add(new String[] {"database.user", user, "the benchmark's server"});
        s.add(new String[] {"database.dbname", database, "the benchmark's server"});
        s.add(new String[] {"topic.prefix", "peer", "required"});
        s.add(new String[] {"slot.name", slot, "one slot per connector"});
        s.add(new String[] {"publication.name", slot + "_pub", "one publication per connector"});
        s.add(new String[] {"publication.autocreate.mode", "filtered",
                "Postgres connector docs: a publication of the captured tables only (default all_tables)"});
        s.add(new String[] {"table.include.list", "public.peer_outbox", "outbox event router docs: capture the"
                + " outbox table only"});
        s.add(new String[] {"tombstones.on.delete", "false", "outbox event router docs"});
        s.add(new String[] {"snapshot.mode", "initial", "default, written out (the harness starts every new"
                + " connector on an empty outbox table)"});
        s.add(new String[] {"heartbeat.interval.ms", "10000", "Postgres connector docs, 'WAL disk space"
                + " consumption': heartbeats let the slot advance while the captured table is quiet"});
        s.add(new String[] {"offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore",
                "embedded engine docs: offsets must outlive the process"});
        s.add(new String[] {"offset.storage.file.filename", offsets, "embedded engine docs"});
        s.add(new String[] {"offset.flush.interval.ms", "60000", "embedded engine default, written out"});
        s.add(new String[] {"max.batch.size", "2048", "connector default, written out"});
        s.add(new String[] {"max.queue.size", "8192", "connector default, written out"});
        s.add(new String[] {"poll.interval.ms", System.getProperty("bench.debezium.pollIntervalMs", "500"),
                "connector default 500, written out (-Dbench.debezium.pollIntervalMs changes it)"});
        s.add(new String[] {"transforms", "outbox", "outbox event router docs"});
        s.add(new String[] {"transforms.outbox.type", "io.debezium.transforms.outbox.EventRouter",
                "outbox event router docs"});
        s.add(new String[] {"transforms.outbox.table.field.event.key", "aggregateid",
                "outbox event router docs (default): the Kafka key"});
        s.add(new String[] {"transforms.outbox.route.by.field", "aggregatetype", "default: the topic"});
        s.add(new String[] {"transforms.outbox.route.topic.replacement", "${routedByValue}",
                "the topic is the row's aggregatetype as is (default outbox.event.${routedByValue})"});
        s.add(new String[] {"transforms.outbox.table.fields.additional.placement", "type:header:eventType",
                "outbox event router docs: a column as a header"});
        s.add(new String[] {"producer: acks / enable.idempotence", "all / true", "Kafka's defaults since 3.0"});
        s.add(new String[] {"handler", "send all of a batch, await every ack, then markProcessed + "
                + "markBatchFinished", "as Debezium Server's Kafka sink (at-least-once)"});
        return s;
    }

    public static void main(String[] args) throws Exception {
        String host = System.getProperty("bench.db.host");
        int port = Integer.getInteger("bench.db.port");
        String user = System.getProperty("bench.jdbc.user");
        String database = System.getProperty("bench.db.name");
        Properties props = new Properties();
        for (String[] s : settings(host, port, user, database, System.getProperty("bench.offsets"),
                System.getProperty("bench.slot"))) {
            if (!s[0].contains(" ") && !s[0].equals("handler")) {
                props.setProperty(s[0], s[1]);
            }
        }
        props.setProperty("database.password", System.getenv().getOrDefault("OUTBOX_BENCH_CHILD_DB_PASSWORD", ""));

        Map<String, Object> producerProps = new LinkedHashMap<>();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, System.getProperty("bench.bootstrap"));
        producerProps.put(ProducerConfig.CLIENT_ID_CONFIG, "peer-debezium");
        KafkaProducer<String, byte[]> producer = new KafkaProducer<>(producerProps, new StringSerializer(),
                new ByteArraySerializer());

        DebeziumEngine<ChangeEvent<SourceRecord, SourceRecord>> engine = DebeziumEngine.create(Connect.class)
                .using(props)
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        System.out.println("READY");
                        System.out.flush();
                    }
                })
                .using((success, message, error) -> {
                    if (!success) {
                        System.err.println("debezium engine stopped: " + message);
                        if (error != null) {
                            error.printStackTrace();
                        }
                    }
                })
                .notifying((records, committer) -> {
                    List<Future<RecordMetadata>> acks = new ArrayList<>(records.size());
                    for (ChangeEvent<SourceRecord, SourceRecord> event : records) {
                        SourceRecord r = event.value();
                        if (r == null || r.value() == null || r.topic().startsWith("__debezium-heartbeat")) {
                            continue;
                        }
                        RecordHeaders headers = new RecordHeaders();
                        for (Header h : r.headers()) {
                            Object v = h.value();
                            headers.add(h.key(), v == null ? null : v instanceof byte[] b ? b
                                    : v.toString().getBytes(StandardCharsets.UTF_8));
                        }
                        acks.add(producer.send(new ProducerRecord<>(r.topic(), null,
                                r.key() == null ? null : r.key().toString(), bytes(r.value()), headers)));
                    }
                    for (Future<RecordMetadata> ack : acks) {
                        try {
                            ack.get();
                        } catch (java.util.concurrent.ExecutionException e) {
                            throw new IllegalStateException("send failed", e.getCause());
                        }
                    }
                    for (ChangeEvent<SourceRecord, SourceRecord> event : records) {
                        committer.markProcessed(event);
                    }
                    committer.markBatchFinished();
                })
                .build();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(engine);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.trim().equals("QUIT")) {
                break;
            }
        }
        engine.close();
        producer.close();
        executor.shutdown();
        System.exit(0);
    }

    private static byte[] bytes(Object value) {
        if (value instanceof byte[] b) {
            return b;
        }
        if (value instanceof ByteBuffer buffer) {
            byte[] b = new byte[buffer.remaining()];
            buffer.duplicate().get(b);
            return b;
        }
        return value.toString().getBytes(StandardCharsets.UTF_8);
    }
}
