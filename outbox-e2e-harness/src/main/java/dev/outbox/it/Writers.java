package dev.outbox.it;

import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;

/**
 * Application threads committing business rows and outbox messages in the same transactions, on real JDBC
 * transactions through the store's publisher. Writer {@code w} owns the keys {@code w<w>-k<j>}, so its commits
 * order each key's messages; the message values carry the key's sequence number and the transaction's token,
 * and the business table {@code e2e_events(key, seq, token)} records what committed — the ground truth the
 * consumed records are checked against. One transaction in twenty is rolled back.
 *
 * <p>By default a writer stops at its first failure, and {@link #close()} reports it. While the database itself is
 * failing ({@link #tolerateFailures()}), a failed transaction is counted instead, and its outcome, which may be
 * unknown (a commit cut off by a stopped server may or may not have committed), is read back from the business
 * table once the database answers again: the writer goes on after what really committed.
 *
 * <p>Flow control: with a {@linkplain #limitBacklog backlog limit}, a writer holds before its next transaction while
 * that many committed messages or more have not yet been delivered. The writers thus commit about as fast as the
 * dispatchers deliver, whatever the machine: a scenario commits what its steps wait for plus at most the limit,
 * instead of as much as the writers manage in the time the steps take (which all had then to be drained and checked
 * after the writers stopped).
 *
 * <p>Rate: with a target of messages a second, each writer keeps to its share of it on a schedule (a rolled-back
 * transaction does not count); a writer more than a second behind its schedule (a slow commit, a fault) starts it
 * again from now rather than burst to catch up, so the rate offered stays steady and what the writers achieved is what
 * the system took. Without a target, each writer pauses between transactions.
 */
final class Writers implements AutoCloseable {
    static final String EVENTS_DDL = "CREATE TABLE e2e_events (key text NOT NULL, seq int NOT NULL, token text NOT NULL,"
            + " PRIMARY KEY (key, seq))";
    private static final long BACKLOG_RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    private final DataSource dataSource;
    private final Publisher publisher;
    private final String topic;
    private final int keysPerWriter;
    private final long pauseNanos;
    /** Per writer, nanoseconds per message on its schedule; 0 for no schedule. */
    private final double nanosPerMessage;
    private final List<Thread> threads = new ArrayList<>();
    private final List<Throwable> failures = new CopyOnWriteArrayList<>();
    private final AtomicInteger committed = new AtomicInteger();
    private final AtomicInteger rolledBack = new AtomicInteger();
    private final AtomicInteger failedTransactions = new AtomicInteger();
    private volatile boolean running = true;
    private volatile boolean tolerant;
    private volatile IntSupplier backlog = () -> 0;
    private volatile int maxBacklog = Integer.MAX_VALUE;
    private long startedNanos;
    private long stoppedNanos;

    /**
     * @param pauseMicros       the pause after each transaction when there is no target rate
     * @param messagesPerSecond the target rate of all writers together, or 0 for none
     */
    Writers(DataSource dataSource, Publisher publisher, String topic, int writers, int keysPerWriter,
            long pauseMicros, int messagesPerSecond, long seed) {
        this.dataSource = dataSource;
        this.publisher = publisher;
        this.topic = topic;
        this.keysPerWriter = keysPerWriter;
        this.pauseNanos = TimeUnit.MICROSECONDS.toNanos(pauseMicros);
        this.nanosPerMessage = messagesPerSecond > 0 ? 1e9 * writers / messagesPerSecond : 0;
        Random seeds = new Random(seed);
        for (int w = 0; w < writers; w++) {
            int writer = w;
            long writerSeed = seeds.nextLong();
            threads.add(new Thread(() -> {
                try {
                    run(writer, new Random(writerSeed));
                } catch (Throwable t) {
                    failures.add(t); // a writer that dies says so at close(), never silently
                }
            }, "e2e-writer-" + w));
        }
    }

    void start() {
        startedNanos = System.nanoTime();
        threads.forEach(Thread::start);
    }

    /** How long the writers ran, from {@link #start()} until {@link #close()} (or until now). */
    long runMillis() {
        long end = stoppedNanos != 0 ? stoppedNanos : System.nanoTime();
        return startedNanos == 0 ? 0 : TimeUnit.NANOSECONDS.toMillis(end - startedNanos);
    }

    /** Messages committed so far. */
    int committed() {
        return committed.get();
    }

    int rolledBack() {
        return rolledBack.get();
    }

    /**
     * From now on, a writer holds before a transaction while {@code backlog} (committed messages not delivered
     * yet) is {@code max} or more; {@code Integer.MAX_VALUE} lifts the limit.
     */
    void limitBacklog(IntSupplier backlog, int max) {
        this.backlog = backlog;
        this.maxBacklog = max;
    }

    /** From now on, a failed transaction is counted and its outcome read back, instead of stopping the writer. */
    void tolerateFailures() {
        tolerant = true;
    }

    /** Transactions that failed while {@link #tolerateFailures() tolerated}. */
    int failedTransactions() {
        return failedTransactions.get();
    }

    private void run(int writer, Random random) {
        int[] next = new int[keysPerWriter];
        int mine = 0;
        int tx = 0;
        long scheduleStart = System.nanoTime();
        long scheduled = 0;
        while (running) {
            if (nanosPerMessage > 0) {
                // Pacing the load on the writer's schedule, not waiting for anything.
                long due = scheduleStart + (long) (scheduled * nanosPerMessage);
                long now = System.nanoTime();
                if (now - due > TimeUnit.SECONDS.toNanos(1)) {
                    scheduleStart = now;
                    scheduled = 0;
                } else if (due - now > 0) {
                    LockSupport.parkNanos(due - now);
                }
            }
            // Flow control, not a wait for time to pass: the writer goes on as soon as the consumer catches up.
            while (running && backlog.getAsInt() >= maxBacklog) {
                LockSupport.parkNanos(BACKLOG_RECHECK_NANOS);
            }
            if (!running) {
                return;
            }
            int messages = 1 + random.nextInt(4);
            boolean rollback = random.nextInt(20) == 0;
            String token = "w" + writer + "t" + tx++ + (rollback ? "R" : "");
            int[] seqs = next.clone();
            List<OutboxMessage> batch = new ArrayList<>(messages);
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                try (PreparedStatement events = c.prepareStatement(
                        "INSERT INTO e2e_events (key, seq, token) VALUES (?, ?, ?)")) {
                    for (int m = 0; m < messages; m++) {
                        int k = random.nextInt(keysPerWriter);
                        String key = "w" + writer + "-k" + k;
                        int seq = seqs[k]++;
                        events.setString(1, key);
                        events.setInt(2, seq);
                        events.setString(3, token);
                        events.addBatch();
                        batch.add(OutboxMessage.builder(topic, key).value(Values.encode(seq, token))
                                .header("token", token).build());
                    }
                    events.executeBatch();
                }
                publisher.publish(c, batch);
                if (rollback) {
                    c.rollback();
                    rolledBack.addAndGet(messages);
                } else {
                    c.commit();
                    next = seqs;
                    mine += messages;
                    committed.addAndGet(messages);
                    scheduled += messages;
                }
            } catch (SQLException | RuntimeException | AssertionError e) {
                // AssertionError: with assertions on (-ea, as in tests), pgjdbc asserts that getAutoCommit() does not
                // throw while it fails a batch, which it does on a connection the server has just closed.
                if (!tolerant) {
                    failures.add(e);
                    return;
                }
                failedTransactions.incrementAndGet();
                int[] recovered = recover(writer);
                if (recovered == null) {
                    return; // stopped while the database was away
                }
                int rows = recovered[keysPerWriter];
                committed.addAndGet(rows - mine);
                mine = rows;
                next = java.util.Arrays.copyOf(recovered, keysPerWriter);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // the writer's backoff
            }
            if (nanosPerMessage == 0) {
                LockSupport.parkNanos(pauseNanos);
            }
        }
    }

    /**
     * Reads back what writer {@code writer} has committed, asking again every 50 ms until the database answers: the
     * next sequence number of each of its keys, then (at index {@code keysPerWriter}) how many rows it committed.
     * Null if the writers were stopped meanwhile.
     */
    private int[] recover(int writer) {
        while (running) {
            int[] out = new int[keysPerWriter + 1];
            String prefix = "w" + writer + "-k";
            try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(
                    "SELECT key, max(seq), count(*) FROM e2e_events WHERE key LIKE ? GROUP BY key")) {
                s.setString(1, prefix + "%");
                try (java.sql.ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        int k = Integer.parseInt(rs.getString(1).substring(prefix.length()));
                        out[k] = rs.getInt(2) + 1;
                        out[keysPerWriter] += rs.getInt(3);
                    }
                }
                return out;
            } catch (SQLException | RuntimeException e) {
                // The database is still away: this is the writer's backoff, not a wait for time to pass.
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
        }
        return null;
    }

    /** Stops the writers and waits for them; fails if one of them failed. */
    @Override
    public void close() throws InterruptedException {
        if (running && startedNanos != 0) {
            stoppedNanos = System.nanoTime();
        }
        running = false;
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(30));
            if (t.isAlive()) {
                throw new AssertionError(t.getName() + " did not stop");
            }
        }
        if (!failures.isEmpty()) {
            AssertionError e = new AssertionError("a writer failed: " + failures.get(0), failures.get(0));
            failures.stream().skip(1).forEach(e::addSuppressed);
            throw e;
        }
    }
}
