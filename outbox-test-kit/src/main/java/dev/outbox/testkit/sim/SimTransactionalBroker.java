package dev.outbox.testkit.sim;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The simulation's transactional broker with a progress record ({@link SimulationBuilder#exactlyOnce()}): Kafka's
 * transaction coordinator for the outbox's one transactional id, its {@code read_committed} log and its compacted
 * progress topic, as {@code outbox-broker-kafka}'s {@code KafkaTransactions} uses them. Each dispatcher sends
 * through a {@link SimProducer} of the id. A transaction's commit makes its records and its progress entry visible
 * at once, an abort neither; a new producer fences the previous ones (bumps the epoch: a transaction still open is
 * aborted, one whose commit was requested completes, as Kafka's {@code initTransactions()} settles them), then reads
 * the last committed progress entry. Every step is an action of the simulation's environment, so that a change of
 * leader, a pause or a timeout can fall between any two of them: a producer beginning a transaction with what the
 * engine queued, requesting its commit, the coordinator completing it, and the engine's purge and its report.
 * Faults (with the simulation's budgets): a commit that aborts ({@code sendFailures}: a send in the transaction
 * failed), a commit whose answer is lost ({@code lostAcks}: the producer is discarded, the commit in doubt until the
 * coordinator completes it or the next producer's fence does), a transaction that outlives the delivery timeout.
 *
 * <p>The checker: every record the log makes visible goes to the simulation's loss and order checks (G1, G2), and
 * one visible twice is a duplicate (G4: none at all with exactly-once). Only the simulation's workers call it, one
 * at a time; not thread-safe.
 */
final class SimTransactionalBroker {

    /**
     * What the broker needs of the simulation's run: its trace and violations, the loss and order checks of a record
     * made visible, the checks of a send, a fault's count, and whether a dispatcher's process is paused (its
     * producer takes no step then; a dispatcher cut off from the group still reaches the broker).
     */
    record Hooks(Consumer<String> event, Consumer<String> violation, Consumer<OutboxRecord> published,
                 BiConsumer<String, OutboxRecord> sending, Runnable fault, Predicate<String> paused) {
    }

    /** A transaction in the coordinator: open, or with its commit requested. */
    static final class Txn {
        final int number;
        final SimProducer producer;
        final int epoch;
        final List<SimProducer.Sent> records;
        boolean committing;
        /** Its progress entry, written with it; null with the bug that writes it outside. */
        Set<Long> progress;
        /** Its producer no longer waits for its outcome (the answer was lost, it timed out, the producer closed). */
        boolean orphaned;

        Txn(int number, SimProducer producer, int epoch, List<SimProducer.Sent> records) {
            this.number = number;
            this.producer = producer;
            this.epoch = epoch;
            this.records = records;
        }

        String ids() {
            List<Long> ids = new ArrayList<>();
            for (SimProducer.Sent s : records) {
                ids.add(s.record().id());
            }
            return "T" + number + " " + ids;
        }

        @Override
        public String toString() {
            return ids() + "@" + epoch + (committing ? "C" : "O") + (orphaned ? "x" : "") + progress;
        }
    }

    final SimScheduler sched;
    final Set<ProgressBug> bugs;
    final Hooks hooks;
    final long deliveryTimeout;
    final Lock lock;
    final Condition changed;
    private final List<SimProducer> producers = new ArrayList<>();
    private final List<Txn> transactions = new ArrayList<>();
    private final Set<Long> visible = new TreeSet<>();
    private Set<Long> progress = new TreeSet<>();
    private int epoch;
    private int txns;
    private int aborts;
    private int lostAnswers;
    private int duplicates;

    SimTransactionalBroker(SimScheduler sched, Set<ProgressBug> bugs, Duration deliveryTimeout, int aborts,
                           int lostAnswers, Hooks hooks) {
        this.sched = sched;
        this.bugs = bugs;
        this.deliveryTimeout = deliveryTimeout.toNanos();
        this.aborts = aborts;
        this.lostAnswers = lostAnswers;
        this.hooks = hooks;
        this.lock = sched.newLock();
        this.changed = lock.newCondition();
    }

    /** Dispatcher {@code name}'s producer of the outbox's transactional id. */
    MessageBroker producer(String name) {
        SimProducer p = new SimProducer(this, name);
        producers.add(p);
        return p;
    }

    /** Records committed twice so far (exactly-once allows none). */
    int duplicates() {
        return duplicates;
    }

    // ---- the environment's actions

    /**
     * Offers the broker's actions: with {@code happy}, those of the happy path (begin what is queued, request the
     * commit, complete a requested commit), which a run of first options takes at once; otherwise the late ones
     * (complete a commit in doubt, abort an abandoned transaction) and, with {@code faultsOn}, the faults.
     */
    void offer(boolean happy, boolean faultsOn, BiConsumer<String, Runnable> add) {
        for (SimProducer p : producers) {
            if (!happy || hooks.paused().test(p.name)) {
                continue;
            }
            if (p.current == null && !p.queue.isEmpty()) {
                add.accept("begin " + p.name, () -> act(p::begin));
            } else if (p.current != null && !p.current.committing) {
                add.accept("request commit " + p.name, () -> act(() -> p.requestCommit(false)));
            }
        }
        for (Txn t : transactions) {
            if (happy && t.committing && !t.orphaned) {
                add.accept("complete " + t.ids(), () -> act(() -> commit(t, "completes")));
            } else if (!happy && t.committing && t.orphaned) {
                add.accept("complete " + t.ids() + " (late)", () -> act(() -> commit(t, "completes in doubt")));
            } else if (!happy && !t.committing && t.orphaned) {
                add.accept("time out " + t.ids(), () -> act(() -> abort(t, "aborts the abandoned",
                        DeliveryException.retriable("transaction timed out", null))));
            }
        }
        if (happy || !faultsOn) {
            return;
        }
        for (SimProducer p : producers) {
            if (aborts > 0 && p.current != null && !p.current.committing && !hooks.paused().test(p.name)) {
                add.accept("abort commit " + p.name, () -> act(() -> {
                    aborts--;
                    hooks.fault().run();
                    p.requestCommit(true);
                }));
            }
        }
        for (Txn t : transactions) {
            if (lostAnswers > 0 && t.committing && !t.orphaned) {
                add.accept("lose answer " + t.ids(), () -> act(() -> {
                    lostAnswers--;
                    hooks.fault().run();
                    hooks.event().accept("broker: the answer to " + t.producer.name + "'s commit of " + t.ids()
                            + " is lost: its outcome is in doubt, the producer is discarded");
                    t.producer.inDoubt(t, "commit's answer lost");
                }));
            }
        }
    }

    private void act(Runnable step) {
        step.run();
        signal();
    }

    void signal() {
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Times out what is due. */
    void runDue() {
        boolean any = false;
        for (SimProducer p : producers) {
            any |= p.expire(sched.now());
        }
        if (any) {
            signal();
        }
    }

    /** The earliest deadline of a record waiting for its outcome, or {@link Long#MAX_VALUE}. */
    long nextDue() {
        long due = Long.MAX_VALUE;
        for (SimProducer p : producers) {
            due = Math.min(due, p.nextDue());
        }
        return due;
    }

    /** Nothing queued, no transaction in the coordinator. */
    boolean settled() {
        for (SimProducer p : producers) {
            if (!p.idle()) {
                return false;
            }
        }
        return transactions.isEmpty();
    }

    // ---- the coordinator

    int epoch() {
        return epoch;
    }

    Txn begin(SimProducer p, List<SimProducer.Sent> records) {
        Txn t = new Txn(++txns, p, p.epoch, records);
        transactions.add(t);
        return t;
    }

    /**
     * {@code by}'s {@code initTransactions()}: bumps the epoch; every transaction of an earlier epoch still open is
     * aborted, every one whose commit was requested completes.
     */
    void fence(SimProducer by) {
        by.epoch = ++epoch;
        hooks.event().accept(by.name + ": initTransactions fences the earlier producers (epoch " + epoch + ")");
        for (Txn t : new ArrayList<>(transactions)) {
            if (t.epoch < epoch) {
                if (t.committing) {
                    commit(t, "completes, at the fence,");
                } else {
                    abort(t, "aborts, at the fence,", DeliveryException.fenced(t.producer.name + " was fenced"
                            + " (epoch " + epoch + ")", null));
                }
            }
        }
    }

    /** The last committed progress entry, as a {@code read_committed} reader sees it. */
    Set<Long> readProgress() {
        return new TreeSet<>(progress);
    }

    /** The progress entry written as its own write (the planted bug). */
    void writeProgressNow(Set<Long> entry) {
        progress = new TreeSet<>(entry);
    }

    /** The commit completes: its records and its progress entry become visible together. */
    void commit(Txn t, String how) {
        transactions.remove(t);
        hooks.event().accept("broker: " + how + " " + t.producer.name + "'s commit of " + t.ids()
                + (t.progress == null ? "" : ", progress " + t.progress));
        for (SimProducer.Sent s : t.records) {
            long id = s.record().id();
            if (!visible.add(id)) {
                duplicates++;
                hooks.violation().accept("G4: #" + id + " committed twice (" + duplicates + " duplicate(s); with"
                        + " exactly-once, read_committed consumers see none)");
            }
            hooks.published().accept(s.record());
        }
        if (t.progress != null) {
            progress = t.progress;
        }
        t.producer.committed(t);
    }

    /** The transaction aborts: nothing of it becomes visible; its producer, if it waits, hears {@code why}. */
    void abort(Txn t, String how, DeliveryException why) {
        transactions.remove(t);
        hooks.event().accept("broker: " + how + " " + t.producer.name + "'s transaction " + t.ids());
        t.producer.aborted(t, why);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("eos e").append(epoch).append(progress).append(visible)
                .append(transactions).append(aborts).append(lostAnswers);
        for (SimProducer p : producers) {
            sb.append(';').append(p);
        }
        return sb.toString();
    }
}
