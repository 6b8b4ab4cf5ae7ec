package dev.outbox.broker.kafka;

import dev.outbox.store.postgres.PostgresInbox;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.postgresql.ds.PGSimpleDataSource;

import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The consumer process that {@link KafkaInboxConsumerCrashTest} kills: runs a {@link KafkaInboxConsumer} and, once
 * the effect of its {@code stopAfter}-th record has committed in the database (and before that record's offset is
 * committed), prints {@code COMMITTED <n>} and blocks its consumer thread until it is killed. It prints
 * {@code OFFSETS <offset>} for every offset commit before that.
 *
 * <p>Arguments: bootstrap servers, topic, group id, consumer name, JDBC URL, user, password, effects table, inbox
 * table, stopAfter.
 */
public final class InboxConsumerChild {
    private InboxConsumerChild() {
    }

    public static void main(String[] args) throws Exception {
        PGSimpleDataSource db = new PGSimpleDataSource();
        db.setURL(args[4]);
        db.setUser(args[5]);
        db.setPassword(args[6]);
        int stopAfter = Integer.parseInt(args[9]);
        AtomicInteger applied = new AtomicInteger();
        CountDownLatch never = new CountDownLatch(1);
        KafkaInboxConsumer consumer = KafkaInboxConsumer.builder().bootstrapServers(args[0]).topics(args[1])
                .groupId(args[2]).consumerName(args[3]).dataSource(db)
                // The group drops the killed member after the session timeout: keep it short.
                .property("session.timeout.ms", 6000).property("heartbeat.interval.ms", 500)
                .inbox(PostgresInbox.builder(db).table(args[8]).build())
                .handler(InboxTestSupport.effectHandler(args[7]))
                .listener(new KafkaInboxConsumer.Listener() {
                    @Override
                    public void applied(ConsumerRecord<String, byte[]> record, UUID messageId) {
                        if (applied.incrementAndGet() == stopAfter) {
                            System.out.println("COMMITTED " + stopAfter);
                            System.out.flush();
                            try {
                                never.await(); // until SIGKILL: the offsets of these records are never committed
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    }

                    @Override
                    public void committed(java.util.Map<org.apache.kafka.common.TopicPartition,
                            org.apache.kafka.clients.consumer.OffsetAndMetadata> offsets) {
                        // One partition: the next offset to read, as committed.
                        offsets.values().forEach(o -> System.out.println("OFFSETS " + o.offset()));
                        System.out.flush();
                    }
                }).build();
        consumer.start();
        never.await();
    }
}
