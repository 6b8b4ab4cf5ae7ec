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
    /** No deadline. */
    static final long NONE = Long.MAX_VALUE;

    private final Chooser chooser;
    private final Random random;
    /** The engine's protocol order, with the planted bugs in it. */
    private final ProtocolOrder order;
    /** The workers' pauses and the run's cut-offs. */
    private final SimStops stops;
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
        this.stops = new SimStops(maxChoices, timeLimitNanos);
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
            if (stops.pausedUntil(t) > now) {
                sb.append(" paused+").append(stops.pausedUntil(t) - now);
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
        String cutOff = stops.choiceCutOff(++choices);
        if (cutOff != null) {
            endRun(cutOff);
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
                stops.pause(t, until);
            }
        }
    }

    /** Whether a worker whose name starts with {@code prefix} is paused ({@link #pause}) now: its process is. */
    public boolean paused(String prefix) {
        return tasks.stream().anyMatch(t -> t.name.startsWith(prefix) && stops.pausedUntil(t) > now);
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
        return new SimLock(this);
    }

    // ------------------------------------------------------------------------------------------ scheduling

    /** Whether the run is over and its workers are being unwound. */
    boolean killing() {
        return killing;
    }

    private Task newTask(String name, Runnable body, boolean daemon) {
        Task t = new Task(name, body, daemon);
        tasks.add(t);
        return t;
    }

    /** The running worker, or null for a thread outside the run. */
    Task self() {
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
    void reschedule(Task me) {
        if (killing) {
            throw new Killed();
        }
        if (trackLocations) {
            me.where = WALKER.walk(frames -> frames
                    .filter(f -> !f.getClassName().startsWith("dev.outbox.testkit.sim.SimScheduler")
                            && !f.getClassName().equals(SimLock.class.getName())
                            && !f.getClassName().equals(SimCondition.class.getName())
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
                    long pausedUntil = stops.pausedUntil(t);
                    if (pausedUntil <= now) {
                        runnable.add(t);
                    } else {
                        wake = Math.min(wake, pausedUntil);
                    }
                } else if (t.deadline != NONE) {
                    wake = Math.min(wake, Math.max(t.deadline, stops.pausedUntil(t)));
                }
            }
            if (!nonDaemonAlive) {
                return null;
            }
            if (!runnable.isEmpty()) {
                return runnable.size() == 1 ? runnable.get(0)
                        : runnable.get(chooseCounted(runnable.size(), "schedule " + runnable));
            }
            if (wake == NONE) {
                endRun("every worker waits and none has a deadline: " + workerStates());
                return null;
            }
            String cutOff = stops.timeCutOff(wake);
            if (cutOff != null) {
                endRun(cutOff + workerStates());
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

    /** Blocks {@code me} on {@code on} until woken or {@code deadline} ({@link #NONE} for none). */
    void block(Task me, Waitable on, String label, long deadline) {
        me.status = Status.BLOCKED;
        me.blockedOn = on;
        me.blockedLabel = label;
        me.deadline = deadline;
        reschedule(me);
    }

    /** Makes the blocked worker {@code t} runnable again. */
    void wakeUp(Task t) {
        if (t.blockedOn != null) {
            t.blockedOn.forget(t);
        }
        t.status = Status.RUNNABLE;
        t.blockedOn = null;
        t.blockedLabel = null;
        t.deadline = NONE;
    }

    /** The deadline {@code nanos} from now, or {@link #NONE}. */
    long deadlineAfter(long nanos) {
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

    /** What a worker may block on: it forgets a worker woken for another reason. */
    interface Waitable {
        void forget(Task t);
    }

    /** A worker: a thread that runs only while it holds its baton. */
    final class Task implements Worker, Waitable {
        final String name;
        final boolean daemon;
        final Thread thread;
        final Semaphore baton = new Semaphore(0);
        final List<Task> joiners = new ArrayList<>();
        Status status = Status.NEW;
        Waitable blockedOn;
        String blockedLabel;
        long deadline = NONE;
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

    /** Throws if {@code me} was interrupted, clearing the interrupt. */
    void takeInterrupt(Task me) throws InterruptedException {
        if (Thread.interrupted() | me.interrupted) {
            me.interrupted = false;
            throw new InterruptedException();
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
