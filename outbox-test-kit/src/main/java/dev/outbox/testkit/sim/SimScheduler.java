package dev.outbox.testkit.sim;

import dev.outbox.internal.EngineRuntime;
import dev.outbox.internal.ProtocolOrder;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A deterministic {@link EngineRuntime}: the engine's workers are threads that pass one baton, so that exactly one
 * of them runs at any moment and only the scheduler decides which. Every lock acquisition and every wait is a
 * point where the {@link Chooser} picks the next worker to run; time is virtual and moves only when no worker can
 * run, straight to the next deadline, so nothing ever really sleeps. Given the same choices, a run repeats bit for
 * bit.
 *
 * <p>Everything the workers share must go through this runtime's locks and conditions (the engine's do), or be
 * touched only between two of its points. Thread-safe in the sense that matters: only the worker holding the
 * baton calls into it.
 */
final class SimScheduler implements EngineRuntime {
    /** Virtual time zero, as a wall-clock instant. */
    public static final Instant EPOCH = Instant.parse("2026-01-01T00:00:00Z");
    private static final long NONE = Long.MAX_VALUE;

    private final Chooser chooser;
    private final Random random;
    /** The engine's protocol order, with the planted bugs in it. */
    private final ProtocolOrder order;
    private final long maxChoices;
    private final long timeLimitNanos;
    private final List<Task> tasks = new ArrayList<>();
    private final Semaphore finished = new Semaphore(0);
    private final Clock clock = new SimClock();

    private volatile long now;
    private Task current;
    private static final StackWalker WALKER = StackWalker.getInstance();
    private boolean trackLocations;
    private long choices;
    private volatile boolean killing;
    private String endReason;
    private Throwable uncaught;
    private final List<java.util.function.Consumer<String>> beforeChoice = new ArrayList<>();

    /**
     * @param chooser        makes every choice of the run
     * @param seed           seeds the engine's randomness (backoff jitter, ids)
     * @param bugs           the planted bugs the engine is told to commit
     * @param maxChoices     the run ends, unfinished, after this many choices
     * @param timeLimitNanos the run ends, unfinished, when virtual time would pass this
     */
    public SimScheduler(Chooser chooser, long seed, Set<PlantedBug> bugs, long maxChoices, long timeLimitNanos) {
        this.chooser = chooser;
        this.random = new Random(seed);
        this.order = PlantedBug.order(bugs);
        this.maxChoices = maxChoices;
        this.timeLimitNanos = timeLimitNanos;
    }

    // ------------------------------------------------------------------------------------------ running

    /**
     * Runs {@code main} as the first worker and returns when the run ended: every worker finished, none could
     * run or wake again, or a limit was reached. Workers still alive then are unwound.
     *
     * @return null if every worker finished, else why the run ended early
     */
    public String run(Runnable main) {
        Task first = newTask("main", main, false);
        current = first;
        first.status = Status.RUNNABLE;
        first.thread.start();
        first.baton.release();
        finished.acquireUninterruptibly();
        killing = true;
        for (Task t : new ArrayList<>(tasks)) {
            if (t.status != Status.DONE) {
                t.baton.release();
                try {
                    t.thread.join(TimeUnit.SECONDS.toMillis(10));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        return endReason;
    }

    /** Why the run ended early (or null), once {@link #run} returned. */
    public String endReason() {
        return endReason;
    }

    /** An exception a worker did not catch, if any. */
    public Throwable uncaught() {
        return uncaught;
    }

    /** The choices made so far. */
    public long choices() {
        return choices;
    }

    /** Virtual time, in nanoseconds since {@link #EPOCH}. */
    public long now() {
        return now;
    }

    /**
     * Runs {@code hook} before every choice, with what the choice is about (to fingerprint the state, say). Call
     * before {@link #run}.
     */
    public void beforeEveryChoice(java.util.function.Consumer<String> hook) {
        beforeChoice.add(hook);
    }

    /** Makes {@link #workerStates()} say where in the code each worker stopped (slower). Call before a run. */
    public void trackLocations() {
        trackLocations = true;
    }

    /** The worker names and what each waits for, for a state fingerprint. */
    public String workerStates() {
        StringBuilder sb = new StringBuilder();
        for (Task t : tasks) {
            sb.append(t.name).append(':').append(t.status);
            if (t.where != null) {
                sb.append(" at ").append(t.where);
            }
            if (t.status == Status.BLOCKED) {
                sb.append('@').append(t.blockedLabel);
                if (t.deadline != NONE) {
                    long left = t.deadline - now;
                    sb.append('+').append(left > TimeUnit.SECONDS.toNanos(60) ? "long" : String.valueOf(left));
                }
            }
            if (t.pausedUntil > now) {
                sb.append(" paused+").append(t.pausedUntil - now);
            }
            sb.append(';');
        }
        return sb.toString();
    }

    /**
     * A choice among {@code n} options, made by the chooser (and counted), by the running worker. Not a point
     * where another worker may run.
     */
    public int choose(int n, String label) {
        if (n <= 1) {
            return 0;
        }
        return chooseCounted(n, label);
    }

    private int chooseCounted(int n, String label) {
        if (++choices > maxChoices) {
            endRun("more than " + maxChoices + " choices");
        }
        for (java.util.function.Consumer<String> hook : beforeChoice) {
            hook.accept(label);
        }
        int c = chooser.choose(n, label);
        if (c < 0 || c >= n) {
            throw new IllegalStateException("chooser chose " + c + " of " + n);
        }
        return c;
    }

    /** A point where the scheduler may let another worker run. */
    public void yieldPoint() {
        Task me = self();
        if (me == null) {
            return;
        }
        reschedule(me);
    }

    /**
     * Keeps every worker whose name starts with {@code prefix} from running until virtual time {@code until}
     * (a whole-process pause, as SIGSTOP).
     */
    public void pause(String prefix, long until) {
        for (Task t : tasks) {
            if (t.name.startsWith(prefix)) {
                t.pausedUntil = Math.max(t.pausedUntil, until);
            }
        }
    }

    /** Whether a worker whose name starts with {@code prefix} is paused ({@link #pause}) now: its process is. */
    public boolean paused(String prefix) {
        return tasks.stream().anyMatch(t -> t.name.startsWith(prefix) && t.pausedUntil > now);
    }

    /** Blocks the running worker until virtual time {@code until} (or an interrupt). */
    public void sleepUntil(long until) {
        Task me = self();
        if (until <= now) {
            reschedule(me);
            return;
        }
        block(me, null, "sleep", until);
    }

    /** The name of the worker calling, or null if the caller is not one of this scheduler's workers. */
    public String currentWorker() {
        Task me = self();
        return me == null ? null : me.name;
    }

    // ------------------------------------------------------------------------------------------ EngineRuntime

    @Override
    public long nanoTime() {
        return now;
    }

    @Override
    public Clock clock() {
        return clock;
    }

    @Override
    public double random() {
        return random.nextDouble();
    }

    @Override
    public UUID randomUuid() {
        return new UUID(random.nextLong(), random.nextLong());
    }

    @Override
    public ProtocolOrder protocolOrder() {
        return order;
    }

    @Override
    public Worker start(String name, Runnable body) {
        return start(name, body, false);
    }

    /** Starts a worker; a daemon worker does not keep the run going. */
    public Worker start(String name, Runnable body, boolean daemon) {
        if (killing) {
            return new Task(name, () -> { }, daemon); // never started: the run is over
        }
        Task t = newTask(name, body, daemon);
        t.status = Status.RUNNABLE;
        t.thread.start();
        return t;
    }

    @Override
    public Lock newLock() {
        return new SimLock();
    }

    // ------------------------------------------------------------------------------------------ scheduling

    private Task newTask(String name, Runnable body, boolean daemon) {
        Task t = new Task(name, body, daemon);
        tasks.add(t);
        return t;
    }

    private Task self() {
        Task c = current;
        if (c != null && c.thread == Thread.currentThread()) {
            return c;
        }
        for (Task t : tasks) {
            if (t.thread == Thread.currentThread()) {
                return t;
            }
        }
        return null;
    }

    /** The running worker {@code me} stays runnable or has just blocked; hands the baton to the next one. */
    private void reschedule(Task me) {
        if (killing) {
            throw new Killed();
        }
        if (trackLocations) {
            me.where = WALKER.walk(frames -> frames
                    .filter(f -> !f.getClassName().startsWith("dev.outbox.testkit.sim.SimScheduler")
                            && !f.getClassName().startsWith("java."))
                    .limit(3).map(f -> f.getMethodName() + ":" + f.getLineNumber())
                    .collect(java.util.stream.Collectors.joining("<")));
        }
        Task next = pickNext();
        if (next == null) {
            endRun(null);
            return;
        }
        if (next != me) {
            current = next;
            next.baton.release();
            me.baton.acquireUninterruptibly();
            if (killing) {
                throw new Killed();
            }
        }
    }

    private Task pickNext() {
        while (true) {
            List<Task> runnable = new ArrayList<>();
            boolean nonDaemonAlive = false;
            long wake = NONE;
            for (Task t : tasks) {
                if (t.status == Status.DONE || t.status == Status.NEW) {
                    continue;
                }
                nonDaemonAlive |= !t.daemon;
                if (t.status == Status.RUNNABLE) {
                    if (t.pausedUntil <= now) {
                        runnable.add(t);
                    } else {
                        wake = Math.min(wake, t.pausedUntil);
                    }
                } else if (t.deadline != NONE) {
                    wake = Math.min(wake, Math.max(t.deadline, t.pausedUntil));
                }
            }
            if (!nonDaemonAlive) {
                return null;
            }
            if (!runnable.isEmpty()) {
                return runnable.size() == 1 ? runnable.get(0) : runnable.get(chooseCounted(runnable.size(), "schedule " + runnable));
            }
            if (wake == NONE) {
                endRun("every worker waits and none has a deadline: " + workerStates());
                return null;
            }
            if (wake > timeLimitNanos) {
                endRun("virtual time limit of " + TimeUnit.NANOSECONDS.toMillis(timeLimitNanos) + " ms reached: "
                        + workerStates());
                return null;
            }
            now = Math.max(now, wake);
            for (Task t : tasks) {
                if (t.status == Status.BLOCKED && t.deadline <= now) {
                    wakeUp(t);
                }
            }
        }
    }

    /** Ends the run: the driver unwinds what is left. The caller never returns normally. */
    private void endRun(String reason) {
        if (endReason == null && reason != null) {
            endReason = reason;
        }
        Task me = self();
        finished.release();
        if (me != null && me.status != Status.DONE) {
            me.baton.acquireUninterruptibly(); // released by the driver, to unwind
        }
        throw new Killed();
    }

    private void block(Task me, Waitable on, String label, long deadline) {
        me.status = Status.BLOCKED;
        me.blockedOn = on;
        me.blockedLabel = label;
        me.deadline = deadline;
        reschedule(me);
    }

    private void wakeUp(Task t) {
        if (t.blockedOn != null) {
            t.blockedOn.forget(t);
        }
        t.status = Status.RUNNABLE;
        t.blockedOn = null;
        t.blockedLabel = null;
        t.deadline = NONE;
    }

    private long deadlineAfter(long nanos) {
        return nanos >= NONE - now ? NONE : now + Math.max(0, nanos);
    }

    // ------------------------------------------------------------------------------------------ types

    private enum Status { NEW, RUNNABLE, BLOCKED, DONE }

    /** Unwinds a worker at the end of a run. */
    static final class Killed extends Error {
        private static final long serialVersionUID = 1L;

        Killed() {
            super("simulation over", null, false, false);
        }
    }

    private interface Waitable {
        void forget(Task t);
    }

    private final class Task implements Worker, Waitable {
        final String name;
        final boolean daemon;
        final Thread thread;
        final Semaphore baton = new Semaphore(0);
        final List<Task> joiners = new ArrayList<>();
        Status status = Status.NEW;
        Waitable blockedOn;
        String blockedLabel;
        long deadline = NONE;
        long pausedUntil;
        boolean interrupted;
        String where;

        Task(String name, Runnable body, boolean daemon) {
            this.name = name;
            this.daemon = daemon;
            this.thread = new Thread(() -> {
                baton.acquireUninterruptibly();
                try {
                    if (!killing) {
                        body.run();
                    }
                } catch (Killed k) {
                    // the run is over
                } catch (Throwable e) {
                    if (uncaught == null) {
                        uncaught = e;
                    }
                    if (!killing) {
                        status = Status.DONE;
                        try {
                            endRun(name + " threw " + e);
                        } catch (Killed k) {
                            // the run is over
                        }
                    }
                } finally {
                    finish();
                }
            }, "sim-" + name);
            thread.setDaemon(true);
        }

        private void finish() {
            status = Status.DONE;
            if (killing) {
                return;
            }
            for (Task j : new ArrayList<>(joiners)) {
                wakeUp(j);
            }
            joiners.clear();
            Task next;
            try {
                next = pickNext();
            } catch (Killed k) {
                return;
            }
            if (next == null) {
                finished.release();
                return;
            }
            current = next;
            next.baton.release();
        }

        @Override
        public void forget(Task t) {
            joiners.remove(t);
        }

        @Override
        public void interrupt() {
            interrupted = true;
            if (status == Status.BLOCKED && !(blockedOn instanceof SimLock)) {
                wakeUp(this);
            }
        }

        @Override
        public boolean join(long nanos) throws InterruptedException {
            Task me = self();
            if (status == Status.DONE || status == Status.NEW && killing) {
                return true;
            }
            takeInterrupt(me);
            joiners.add(me);
            block(me, this, "join " + name, deadlineAfter(nanos));
            takeInterrupt(me);
            return status == Status.DONE;
        }

        @Override
        public boolean isCurrent() {
            return Thread.currentThread() == thread;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private void takeInterrupt(Task me) throws InterruptedException {
        if (Thread.interrupted() | me.interrupted) {
            me.interrupted = false;
            throw new InterruptedException();
        }
    }

    private final class SimLock implements Lock, Waitable {
        private Task owner;
        private int holds;
        private final List<Task> waiters = new ArrayList<>();

        @Override
        public void lock() {
            Task me = self();
            if (me == null) {
                if (owner != null) {
                    throw new IllegalStateException("a lock of the simulation is held by " + owner);
                }
                return; // a thread outside the run, after it: nothing to order against
            }
            if (owner == me) {
                holds++;
                return;
            }
            if (killing) {
                if (owner != null) {
                    throw new Killed();
                }
            } else {
                reschedule(me);
                while (owner != null) {
                    waiters.add(me);
                    block(me, this, "lock", NONE);
                }
            }
            owner = me;
            holds = 1;
        }

        @Override
        public void unlock() {
            Task me = self();
            if (me == null || owner == null) {
                return;
            }
            if (owner != me) {
                throw new IllegalMonitorStateException("unlock by " + me + ", owner " + owner);
            }
            if (--holds == 0) {
                release();
            }
        }

        void release() {
            owner = null;
            holds = 0;
            for (Task t : new ArrayList<>(waiters)) {
                wakeUp(t);
            }
            waiters.clear();
        }

        void reacquire(Task me, int count) {
            while (owner != null && owner != me) {
                if (killing) {
                    throw new Killed();
                }
                waiters.add(me);
                block(me, this, "relock", NONE);
            }
            owner = me;
            holds = count;
        }

        @Override
        public void forget(Task t) {
            waiters.remove(t);
        }

        @Override
        public void lockInterruptibly() {
            lock();
        }

        @Override
        public boolean tryLock() {
            Task me = self();
            if (owner != null && owner != me) {
                return false;
            }
            lock();
            return true;
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) {
            return tryLock();
        }

        @Override
        public Condition newCondition() {
            return new SimCondition(this);
        }
    }

    private final class SimCondition implements Condition, Waitable {
        private final SimLock lock;
        private final List<Task> waiters = new ArrayList<>();

        SimCondition(SimLock lock) {
            this.lock = lock;
        }

        @Override
        public long awaitNanos(long nanos) throws InterruptedException {
            Task me = self();
            if (me == null || lock.owner != me) {
                throw new IllegalMonitorStateException("await without holding the lock");
            }
            takeInterrupt(me);
            if (nanos <= 0) {
                return nanos;
            }
            int count = lock.holds;
            long deadline = deadlineAfter(nanos);
            lock.release();
            waiters.add(me);
            try {
                block(me, this, "await", deadline);
            } finally {
                waiters.remove(me);
                if (!killing) {
                    lock.reacquire(me, count);
                } else if (lock.owner == null) {
                    lock.owner = me;
                    lock.holds = count;
                }
            }
            takeInterrupt(me);
            return deadline == NONE ? Long.MAX_VALUE : deadline - now;
        }

        @Override
        public void forget(Task t) {
            waiters.remove(t);
        }

        @Override
        public void await() throws InterruptedException {
            awaitNanos(NONE);
        }

        @Override
        public void awaitUninterruptibly() {
            try {
                await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public boolean await(long time, TimeUnit unit) throws InterruptedException {
            return awaitNanos(unit.toNanos(time)) > 0;
        }

        @Override
        public boolean awaitUntil(java.util.Date deadline) throws InterruptedException {
            return awaitNanos(TimeUnit.MILLISECONDS.toNanos(deadline.getTime() - clock.millis())) > 0;
        }

        @Override
        public void signal() {
            if (!waiters.isEmpty()) {
                wakeUp(waiters.get(0));
            }
        }

        @Override
        public void signalAll() {
            for (Task t : new ArrayList<>(waiters)) {
                wakeUp(t);
            }
        }
    }

    private final class SimClock extends Clock {
        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return EPOCH.plusNanos(now);
        }
    }
}
