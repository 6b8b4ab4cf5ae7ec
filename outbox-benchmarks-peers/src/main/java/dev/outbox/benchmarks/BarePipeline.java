package dev.outbox.benchmarks;


import dev.outbox.DispatcherConfig;
import dev.outbox.MessageIds;
import dev.outbox.OutboxRecord;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.Store;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The physical-limit line for our engine (issue #34): the cursor drain with no engine at all. One thread reads with
 * the store's own cursor {@code read} (as much as the in-flight room allows, as the engine does) and hands every
 * record to a bare {@link KafkaProducer} with exactly the Dispatcher's producer properties, as the same Kafka record
 * (headers, message id header, creation time) that {@code KafkaMessageBroker} makes of it; a second waits for each
 * batch's acknowledgements in order; a third purges the acknowledged ids with the store's own {@code purge}, in
 * batches of {@code purgeBatchSize}, and gives their room back. No retries, no ordering bookkeeping, no leadership:
 * what the engine adds to this is its own cost.
 */
final class BarePipeline {
    private BarePipeline() {
    }

    /** Fills the table with {@code rows} records and drains them; returns {records, seconds}. */
    static double[] run(BenchEnvironment env, BenchmarkOptions options, int rows) throws Exception {
        String topic = env.newTopic("bare");
        Backlog backlog = new Backlog(env, options);
        backlog.fill(topic, rows, options.seed);
        Store store = env.store();
        DispatcherConfig config = env.dispatcherConfig();
        Map<String, Object> p = env.producerProperties();
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "bench-bare");
        Semaphore room = new Semaphore(config.maxInFlightRecords());
        BlockingQueue<Object[]> sent = new ArrayBlockingQueue<>(1_000);
        BlockingQueue<List<Long>> acked = new ArrayBlockingQueue<>(1_000);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong purged = new AtomicLong();
        long started;
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(),
                new ByteArraySerializer())) {
            started = System.nanoTime();
            Thread reader = thread("bench-bare-read", failure, () -> {
                long cursor = 0;
                while (true) {
                    room.acquire(config.markBatchSize());
                    int limit = config.markBatchSize() + room.drainPermits();
                    List<Long> ids = new ArrayList<>(limit);
                    List<Future<RecordMetadata>> acks = new ArrayList<>(limit);
                    for (OutboxRecord r : dev.outbox.spi.Store.require(store, dev.outbox.spi.CursorHarvest.class, "the benchmark").read(cursor, List.of(), limit).rows().records()) {
                        ids.add(r.id());
                        acks.add(producer.send(kafkaRecord(r)));
                    }
                    room.release(limit - ids.size());
                    if (ids.isEmpty()) {
                        sent.put(new Object[] {ids, acks});
                        return;
                    }
                    cursor = ids.get(ids.size() - 1);
                    sent.put(new Object[] {ids, acks});
                }
            });
            Thread waiter = thread("bench-bare-ack", failure, () -> {
                while (true) {
                    Object[] batch = sent.take();
                    @SuppressWarnings("unchecked")
                    List<Long> ids = (List<Long>) batch[0];
                    @SuppressWarnings("unchecked")
                    List<Future<RecordMetadata>> acks = (List<Future<RecordMetadata>>) batch[1];
                    for (Future<RecordMetadata> ack : acks) {
                        ack.get();
                    }
                    acked.put(ids);
                    if (ids.isEmpty()) {
                        return;
                    }
                }
            });
            Thread purger = thread("bench-bare-purge", failure, () -> {
                List<List<Long>> taken = new ArrayList<>();
                List<Long> batch = new ArrayList<>();
                boolean end = false;
                while (!end) {
                    taken.clear();
                    taken.add(acked.take());
                    acked.drainTo(taken);
                    batch.clear();
                    for (List<Long> some : taken) {
                        end |= some.isEmpty();
                        batch.addAll(some);
                    }
                    for (int i = 0; i < batch.size(); i += config.purgeBatchSize()) {
                        List<Long> part = batch.subList(i, Math.min(batch.size(), i + config.purgeBatchSize()));
                        store.purge(part);
                        purged.addAndGet(part.size());
                        room.release(part.size());
                    }
                }
            });
            for (Thread t : List.of(reader, waiter, purger)) {
                t.join(options.timeout.toMillis());
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException("bare pipeline failed: " + failure.get(), failure.get());
        }
        return new double[] {purged.get(), (System.nanoTime() - started) / 1e9, backlog.count()};
    }

    /**
     * The Kafka record {@code KafkaMessageBroker} makes of {@code r} with its defaults: the message's headers, then the
     * message id header, and the row's creation time as the record's timestamp — the same bytes on the wire.
     */
    private static ProducerRecord<String, byte[]> kafkaRecord(OutboxRecord r) {
        List<org.apache.kafka.common.header.Header> headers = new ArrayList<>(r.message().headers().size() + 1);
        for (dev.outbox.Header h : r.message().headers()) {
            headers.add(new RecordHeader(h.name(), h.value()));
        }
        if (r.messageId() != null) {
            headers.add(new RecordHeader(KafkaMessageBroker.DEFAULT_MESSAGE_ID_HEADER, MessageIds.toHeader(r.messageId())));
        }
        return new ProducerRecord<>(r.topic(), null, r.createdAt().toEpochMilli(), r.key(), r.message().value(), headers);
    }

    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }

    private static Thread thread(String name, AtomicReference<Throwable> failure, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }
}
