package dev.outbox.broker.kafka;

import dev.outbox.spi.Backoff;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The consumer thread: polls, works through the fetched records one per partition per round, commits the offsets of
 * those done, purges expired inbox entries when due, and follows rebalances. Its state is the thread's own, apart
 * from the flags {@link #stop()} and {@link #failure()} share with other threads.
 */
final class InboxLoop implements Runnable {
    /** The longest the consumer works through fetched records before it polls again. */
    private static final long WORK_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(100);
    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    private final KafkaConsumer<String, byte[]> consumer;
    private final InboxConsumerSettings settings;
    private final String consumerName;
    private final InboxCounts counts;
    private final InboxPartitions partitions = new InboxPartitions();
    private final InboxDatabase database;
    private final InboxOffsets offsets;
    private final InboxSequenceGuard sequence;
    private final InboxRecordStep step;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private long nextPurge;
    private volatile boolean running;
    private volatile Throwable failure;

    InboxLoop(KafkaConsumer<String, byte[]> consumer, InboxConsumerSettings settings, InboxCounts counts) {
        this.consumer = consumer;
        this.settings = settings;
        this.consumerName = settings.consumerName();
        this.counts = counts;
        Backoff retries = Backoff.exponential(settings.initialBackoff(), settings.maxBackoff());
        this.database = new InboxDatabase(settings.dataSource(), retries, settings.listener(), consumerName);
        this.offsets = new InboxOffsets(consumer, settings.listener(), consumerName);
        this.sequence = new InboxSequenceGuard(settings.onSequenceBreak(), settings.sequenceHoldTimeout(),
                settings.sequenceKeysPerPartition(), settings.listener(), counts, consumerName);
        this.step = new InboxRecordStep(settings, retries, partitions, database, offsets, counts, sequence);
    }

    /** Lets {@link #run()} loop until {@link #stop()}; called before the thread starts. */
    void arm() {
        running = true;
    }

    /** Asks the thread to stop after the record it works on. */
    void stop() {
        running = false;
    }

    /** The error that ended the thread, or null. */
    Throwable failure() {
        return failure;
    }

    /** The key sequence check, whose holds any thread may see and release. */
    InboxSequenceGuard sequence() {
        return sequence;
    }

    /** Waits for the thread to end; returns whether it did within the timeout. */
    boolean awaitStopped(long millis) throws InterruptedException {
        return stopped.await(millis, TimeUnit.MILLISECONDS);
    }

    @Override
    public void run() {
        try {
            consumer.subscribe(settings.topics(), new Rebalance());
            nextPurge = System.nanoTime() + settings.purgeInterval().toNanos();
            while (running) {
                ConsumerRecords<String, byte[]> records = consumer.poll(pollTimeout());
                partitions.add(records);
                pauseBusyPartitions();
                work();
                offsets.commit();
                purgeIfDue();
            }
        } catch (WakeupException e) {
            if (running) {
                failure = e;
            }
        } catch (Throwable e) {
            failure = e;
            log.error("Inbox consumer {} stopped on an unexpected error", consumerName, e);
        } finally {
            try {
                offsets.commit();
            } catch (RuntimeException e) {
                log.warn("Inbox consumer {}: the last offset commit failed; records done since the previous one will"
                        + " be redelivered and skipped as duplicates", consumerName, e);
            }
            try {
                consumer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                log.debug("closing the Kafka consumer", e);
            }
            database.close();
            stopped.countDown();
            log.info("Inbox consumer {} stopped: {} applied, {} duplicates, {} failed", consumerName,
                    counts.applied.get(), counts.duplicates.get(), counts.failed.get());
        }
    }

    /** Zero when a record can be worked on now; otherwise until the earliest retry, at most the poll timeout. */
    private Duration pollTimeout() {
        long now = System.nanoTime();
        long wait = POLL_TIMEOUT.toNanos();
        long databaseWait = database.nanosUntilRetry(now);
        if (databaseWait > 0) {
            return Duration.ofNanos(Math.min(wait, databaseWait));
        }
        return Duration.ofNanos(partitions.nanosUntilReady(now, wait));
    }

    /** A partition with records waiting fetches nothing more until they are done. */
    private void pauseBusyPartitions() {
        List<TopicPartition> busy = partitions.busy();
        if (!busy.isEmpty()) {
            consumer.pause(busy);
        }
    }

    private void work() {
        long started = System.nanoTime();
        boolean progress = true;
        while (progress && System.nanoTime() - started < WORK_BUDGET_NANOS && running) {
            progress = false;
            for (TopicPartition tp : partitions.partitions()) {
                long now = System.nanoTime();
                if (database.nanosUntilRetry(now) > 0) {
                    return;
                }
                ConsumerRecord<String, byte[]> record = partitions.ready(tp, now);
                if (record == null) {
                    continue;
                }
                // One record per partition per round, so partitions take turns.
                if (step.step(tp, record) && partitions.done(tp)) {
                    consumer.resume(List.of(tp));
                }
                progress = true;
            }
        }
    }

    private void purgeIfDue() {
        if (System.nanoTime() - nextPurge < 0) {
            return;
        }
        nextPurge = System.nanoTime() + settings.purgeInterval().toNanos();
        try {
            int purged = settings.inbox().purgeExpired();
            log.debug("Inbox consumer {}: purged {} expired inbox entries", consumerName, purged);
        } catch (RuntimeException e) {
            log.warn("Inbox consumer {}: purging expired inbox entries failed; trying again in {}", consumerName,
                    settings.purgeInterval(), e);
        }
    }

    /** Runs inside poll(), on the consumer thread, between records: nothing is half done. */
    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            try {
                offsets.commit(revoked);
            } finally {
                offsets.forget(revoked);
                partitions.forget(revoked);
                sequence.forget(revoked);
            }
            log.info("Inbox consumer {}: partitions revoked {}", consumerName, revoked);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            offsets.forget(lost);
            partitions.forget(lost);
            sequence.forget(lost);
            log.warn("Inbox consumer {}: partitions lost {} (nothing committed for them)", consumerName, lost);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            log.info("Inbox consumer {}: partitions assigned {}", consumerName, assigned);
        }
    }
}
