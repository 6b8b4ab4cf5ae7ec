package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import java.time.Instant;
import java.util.Optional;

/**
 * A record in flight when the leader takes a fresh leader id (after a mark failed: one of the global rewinds; a
 * failed delivery no longer causes one) is marked again by the next mark. If its acknowledgement arrives and its purge commits while that mark is returning — after the
 * store returned the row, before the dispatcher queued it — the dispatcher must not send it a second time: it
 * was delivered, and nothing failed for it. (Found by the end-to-end suite: a record too large for its topic
 * made the leader refresh its id, and records in flight at that moment were published twice; failed deliveries
 * no longer refresh the id, but failed marks still do.)
 */
class DispatcherRemarkRaceTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void aRecordPurgedWhileItsRemarkReturnsIsNotSentAgain() throws Exception {
        AtomicBoolean firstSendOfA = new AtomicBoolean(true);
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> {
            if (r.key().equals("a") && firstSendOfA.getAndSet(false)) {
                return Fault.of(Outcome.HANG); // in flight until the test releases it
            }
            return Fault.ACK;
        }).build();
        InMemoryStore memory = new InMemoryStore();
        GatedStore store = new GatedStore(memory);
        long a;
        try (InMemoryStore.Transaction tx = memory.begin()) {
            a = tx.write(OutboxMessage.of("t", "a", "1"));
            tx.commit();
        }
        store.gate(a);
        DispatcherConfig config = DispatcherConfig.builder()
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .heartbeatTimeout(Duration.ofMillis(300))
                .ioErrorBackoff(Duration.ofMillis(5))
                .maxIoErrorBackoff(Duration.ofMillis(50))
                .harvest(DispatcherConfig.Harvest.MARK) // the race is the mark's: a cursor read changes nothing
                .build();
        try (Dispatcher d = Dispatcher.builder(store, broker).config(config).name("remark-race").build()) {
            d.start();
            // The mark after the one that returned `a` fails; the leader takes a fresh id and marks `a` again while
            // `a` is still in flight. That mark is held just after the store returned `a`.
            assertThat(store.gateReached.await(WAIT.toSeconds(), TimeUnit.SECONDS)).as("re-mark of a").isTrue();
            assertThat(store.failedMarks.get()).isEqualTo(1);
            // Now `a` is acknowledged and purged...
            assertThat(broker.releaseHung()).isEqualTo(1);
            Await.untilOrFail(() -> memory.size() == 0 && d.inFlightRecords() == 0, WAIT,
                    () -> "a purged: rows " + memory.rows() + ", in flight " + d.inFlightRecords());
            // ... and only then does the held mark return to the dispatcher.
            int marks = store.marks.get();
            store.proceed.countDown();
            Await.untilOrFail(() -> store.marks.get() >= marks + 2, WAIT, () -> "the dispatcher marking on");
        }
        List<OutboxRecord> deliveredA = broker.delivered().stream().filter(r -> r.key().equals("a")).toList();
        assertThat(deliveredA).as("deliveries of a").hasSize(1);
    }

    /**
     * A store whose mark fails once right after the mark that first returned the gated id, and, once it returns the
     * gated id again, waits for the test before returning.
     */
    private static final class GatedStore implements Store, MarkHarvest {
        private final InMemoryStore delegate;
        final CountDownLatch gateReached = new CountDownLatch(1);
        final CountDownLatch proceed = new CountDownLatch(1);
        final AtomicInteger marks = new AtomicInteger();
        final AtomicInteger failedMarks = new AtomicInteger();
        private volatile long gated = -1;
        private volatile UUID firstLeaderId;

        GatedStore(InMemoryStore delegate) {
            this.delegate = delegate;
        }

        void gate(long id) {
            gated = id;
        }

        @Override
        public MarkResult mark(UUID leaderId, int limit) {
            if (firstLeaderId != null && failedMarks.get() == 0) {
                failedMarks.incrementAndGet();
                throw new StoreException("injected: connection lost during mark", new java.io.IOException("lost"),
                        true);
            }
            MarkResult result = delegate.mark(leaderId, limit);
            marks.incrementAndGet();
            boolean hasGated = result.records().stream().anyMatch(r -> r.id() == gated);
            if (hasGated && firstLeaderId == null) {
                firstLeaderId = leaderId;
            } else if (hasGated && !leaderId.equals(firstLeaderId) && gateReached.getCount() > 0) {
                gateReached.countDown();
                try {
                    if (!proceed.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the test never let the mark return");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
            }
            return result;
        }

        @Override
        public Publisher publisher() {
            return delegate.publisher();
        }

        @Override
        public void purge(Collection<Long> ids) {
            delegate.purge(ids);
        }

        @Override
        public void reset(UUID leaderId, Collection<Long> ids) {
            delegate.reset(leaderId, ids);
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
            delegate.retryLater(nextAttempts);
        }

        @Override
        public void park(Map<Long, String> reasons) {
            delegate.park(reasons);
        }

        /** Only the mark is gated: every other capability is the delegate's. */
        @Override
        public <T> Optional<T> capability(Class<T> type) {
            return type == MarkHarvest.class ? Optional.of(type.cast(this)) : delegate.capability(type);
        }
    }
}
