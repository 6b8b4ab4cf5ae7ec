package dev.outbox.testkit;

import dev.outbox.DuplicateMessageException;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The writers of {@link DispatcherOptionsFaultInjectionTest}, and the ledger of what they wrote. A message is named
 * {@code <key>:<value>} (its values count up per key, so the broker's order of a key can be checked); every name is
 * written once.
 *
 * <p>Each writer owns its keys, so its writes to a key are causally ordered. Through the options' publisher (one call,
 * one atomic transaction) it writes 1–3 messages over {@value #OPTION_KEYS} keys, each independently delayed (2–100 ms,
 * by {@code deliverAt} or {@code deliverAfter}), latest only, and with a fresh idempotency key; now and then the call
 * also repeats an idempotency key written before (in an earlier call or the same one). A fifth of its transactions
 * go straight to the wrapped store, over {@value #TX_KEYS} keys of its own, plain or latest only, committing late
 * (their ids taken early) or rolling back, as in {@link DispatcherFaultInjectionTest}. Two racers write one
 * idempotency key each round, released together by a barrier.
 *
 * <p>Thread-safe: the ledger is concurrent, each writer's state its own.
 */
final class OptionsWriters {
    static final int WRITERS = 4;
    static final int OPTION_KEYS = 20;
    static final int TX_KEYS = 4;
    static final int TRANSACTIONS_PER_WRITER = 120;
    static final int RACES = 40;

    /** Committed messages, by name, with their key: each is to be published, superseded or parked. */
    final Map<String, String> committed = new ConcurrentHashMap<>();
    /** Messages never written: duplicates skipped or refused, rolled back. None may ever reach the broker. */
    final Set<String> notWritten = ConcurrentHashMap.newKeySet();
    /** Pairs written by two racers with one idempotency key: exactly one of each pair is written. */
    final List<List<String>> races = new CopyOnWriteArrayList<>();
    /** Delayed messages (committed or not), by name: no earlier than this by the store's clock. */
    final Map<String, Instant> due = new ConcurrentHashMap<>();
    /** Messages with an idempotency key (committed or not), by name: at most one name of a key is published. */
    final Map<String, String> idempotencyKeys = new ConcurrentHashMap<>();
    /** Latest-only messages, by name: the only ones that may be superseded. */
    final Set<String> latestOnly = ConcurrentHashMap.newKeySet();
    final AtomicInteger repeats = new AtomicInteger();
    final AtomicInteger refusals = new AtomicInteger();

    private final Publisher publisher;
    private final InMemoryStore store;
    private final Clock clock;

    /**
     * @param publisher the publisher of the store with the options (or of a planted bug's variant)
     * @param store     the wrapped store, for the transactions that bypass the options
     * @param clock     the clock that stands for the store's
     */
    OptionsWriters(Publisher publisher, InMemoryStore store, Clock clock) {
        this.publisher = publisher;
        this.store = store;
        this.clock = clock;
    }

    /** The body of writer {@code writer}. */
    void write(int writer, Random random) {
        int[] next = new int[OPTION_KEYS + TX_KEYS];
        List<String> claimed = new ArrayList<>();
        int fresh = 0;
        for (int t = 0; t < TRANSACTIONS_PER_WRITER; t++) {
            if (random.nextInt(5) == 0) {
                writeInTransaction(writer, random, next);
                continue;
            }
            Instant before = clock.instant(); // the store's "now" at the call is no earlier
            List<OutboxMessage> call = new ArrayList<>();
            List<String> names = new ArrayList<>();
            List<String> repeated = new ArrayList<>();
            List<String> claims = new ArrayList<>();
            int messages = 1 + random.nextInt(3);
            for (int m = 0; m <= messages; m++) {
                boolean repeat = m == messages;
                if (repeat && (random.nextInt(5) != 0 || claimed.isEmpty() && claims.isEmpty())) {
                    break;
                }
                int k = random.nextInt(OPTION_KEYS);
                String key = "w" + writer + "-k" + k;
                String name = key + ":" + next[k]++;
                OutboxMessage.Builder b = OutboxMessage.builder("t", key).value(name.substring(key.length() + 1));
                if (random.nextInt(5) == 0) {
                    Duration delay = Duration.ofMillis(2 + random.nextInt(99));
                    if (random.nextBoolean()) {
                        b.deliverAt(before.plus(delay));
                    } else {
                        b.deliverAfter(delay);
                    }
                    due.put(name, before.plus(delay));
                }
                if (random.nextInt(10) < 3) {
                    b.latestOnly();
                    latestOnly.add(name);
                }
                String idempotencyKey = null;
                if (repeat) {
                    List<String> from = !claims.isEmpty() && (claimed.isEmpty() || random.nextBoolean())
                            ? claims : claimed;
                    idempotencyKey = from.get(random.nextInt(from.size()));
                    repeated.add(name);
                    repeats.incrementAndGet();
                } else if (random.nextInt(10) < 3) {
                    idempotencyKey = "w" + writer + "-i" + fresh++;
                    claims.add(idempotencyKey);
                }
                if (idempotencyKey != null) {
                    b.idempotencyKey(idempotencyKey);
                    idempotencyKeys.put(name, idempotencyKey);
                }
                call.add(b.build());
                if (!repeat) {
                    names.add(name);
                }
            }
            try {
                publisher.publish(null, call);
            } catch (DuplicateMessageException e) {
                if (repeated.isEmpty()) {
                    throw new IllegalStateException("a call without a repeated idempotency key was refused", e);
                }
                refusals.incrementAndGet();
                notWritten.addAll(names);
                notWritten.addAll(repeated);
                continue;
            }
            for (String name : names) {
                committed.put(name, name.substring(0, name.indexOf(':')));
            }
            notWritten.addAll(repeated);
            claimed.addAll(claims);
            if (random.nextInt(4) == 0) {
                LockSupport.parkNanos(Duration.ofMillis(1).toNanos()); // pace the writers a little
            }
        }
    }

    private void writeInTransaction(int writer, Random random, int[] next) {
        Map<String, String> written = new HashMap<>();
        try (InMemoryStore.Transaction tx = store.begin()) {
            int messages = 1 + random.nextInt(2);
            for (int m = 0; m < messages; m++) {
                int k = random.nextInt(TX_KEYS);
                String key = "w" + writer + "-x" + k;
                String name = key + ":" + next[OPTION_KEYS + k]++;
                OutboxMessage.Builder b = OutboxMessage.builder("t", key).value(name.substring(key.length() + 1));
                if (random.nextInt(10) < 3) {
                    b.latestOnly();
                    latestOnly.add(name);
                }
                tx.write(b.build());
                written.put(name, key);
            }
            if (random.nextInt(10) == 0) {
                // Hold the transaction open: its ids were taken early, it commits after later ones.
                LockSupport.parkNanos(Duration.ofMillis(random.nextInt(5)).toNanos());
            }
            if (random.nextInt(20) == 0) {
                tx.rollback();
                notWritten.addAll(written.keySet());
                return;
            }
            tx.commit();
        }
        committed.putAll(written);
    }

    /**
     * The body of racer {@code racer} (0 or 1): each round, both write a message of key {@code race-<round>} with the
     * idempotency key {@code race-<round>}, value {@code racer}, every third round delayed by 5 ms.
     */
    void race(int racer, CyclicBarrier barrier) throws Exception {
        for (int round = 0; round < RACES; round++) {
            String key = "race-" + round;
            String name = key + ":" + racer;
            OutboxMessage.Builder b = OutboxMessage.builder("t", key).value(String.valueOf(racer))
                    .idempotencyKey(key);
            Instant before = clock.instant();
            if (round % 3 == 0) {
                b.deliverAfter(Duration.ofMillis(5));
                due.put(name, before.plus(Duration.ofMillis(5)));
            }
            idempotencyKeys.put(name, key);
            if (racer == 0) {
                races.add(List.of(key + ":0", key + ":1"));
            }
            barrier.await(10, TimeUnit.SECONDS);
            try {
                publisher.publish(null, List.of(b.build()));
            } catch (DuplicateMessageException e) {
                refusals.incrementAndGet();
                notWritten.add(name); // FAIL: this racer lost; the other one's message is written
            }
        }
    }
}
