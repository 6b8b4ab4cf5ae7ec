package dev.outbox.handlers;

import dev.outbox.spi.DeliveryException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The bounded pool handlers run on: a fixed number of threads and a bounded queue, a timeout per run (the run's
 * thread is interrupted and its stage failed, retriable), and one run per key at a time — a key's next run waits
 * until its previous one returned, even one that outlived its timeout, so a retry never overtakes the run it
 * repeats. A slow run holds its own thread and key; other keys run on the other threads. Thread-safe.
 */
final class HandlerExecutor {
    private static final Logger log = LoggerFactory.getLogger(HandlerExecutor.class);

    /** A piece of work with the key it holds; what it throws completes its stage. */
    interface Work {
        void run() throws Exception;
    }

    private final String name;
    private final Duration timeout;
    private final ThreadPoolExecutor pool;
    private final ScheduledThreadPoolExecutor timer;
    /** Per key, the end of its latest run: a key's next run starts after it. */
    private final Map<String, CompletableFuture<Void>> keys = new ConcurrentHashMap<>();
    /** Stages not yet completed, for flush and close. */
    private final Set<CompletableFuture<Void>> pending = ConcurrentHashMap.newKeySet();

    HandlerExecutor(String name, int threads, int queueCapacity, Duration timeout) {
        this.name = name;
        this.timeout = timeout;
        this.pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(queueCapacity), threads(name + "-handler-"));
        this.timer = new ScheduledThreadPoolExecutor(1, threads(name + "-handler-timeout-"));
        this.timer.setRemoveOnCancelPolicy(true);
    }

    /**
     * Runs {@code work} after the previous run of {@code key} returned, within the timeout.
     *
     * @param what names the run in failures ("record 17 of topic 'orders'")
     * @return a stage completed when the work returned, or exceptionally with a {@link DeliveryException}: as the
     *         work threw it, {@link PermanentFailureException} as permanent, anything else retriable; an outage if
     *         the queue is full
     */
    CompletableFuture<Void> submit(String key, String what, Work work) {
        CompletableFuture<Void> stage = new CompletableFuture<>();
        pending.add(stage);
        stage.whenComplete((v, e) -> pending.remove(stage));
        CompletableFuture<Void> ended = new CompletableFuture<>();
        CompletableFuture<Void> previous = keys.put(key, ended);
        ended.whenComplete((v, e) -> keys.remove(key, ended));
        Run run = new Run(what, work, stage, ended);
        if (previous == null || previous.isDone()) {
            enqueue(run);
        } else {
            log.debug("{}: {} waits for the previous run of its key, which outlived its timeout", name, what);
            previous.whenComplete((v, e) -> enqueue(run));
        }
        return stage;
    }

    /** Runs {@code task} on a handler thread (a fallback); false if the pool refused it (full or closed). */
    boolean execute(Runnable task) {
        try {
            pool.execute(task);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    private void enqueue(Run run) {
        try {
            pool.execute(run);
        } catch (RejectedExecutionException e) {
            run.ended.complete(null);
            run.stage.completeExceptionally(pool.isShutdown()
                    ? DeliveryException.retriable("the handlers of " + name + " are closed", null)
                    : DeliveryException.outage("the handlers' queue of " + name + " is full ("
                    + pool.getQueue().size() + " records wait for " + pool.getMaximumPoolSize() + " threads)", null));
        }
    }

    /** Stages not yet completed. */
    List<CompletableFuture<Void>> pending() {
        return List.copyOf(pending);
    }

    /** Waits at most {@code timeout} for every stage pending now; whether they all completed. */
    boolean flush(Duration timeout) {
        try {
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).handle((v, e) -> null)
                    .get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("unreachable", e);
        }
    }

    /** Fails every pending stage, interrupts the runs under way and stops the threads, waiting at most {@code wait}. */
    void shutdown(Duration wait) {
        pool.shutdownNow();
        timer.shutdownNow();
        for (CompletableFuture<Void> stage : List.copyOf(pending)) {
            stage.completeExceptionally(DeliveryException.retriable("the handlers of " + name
                    + " were closed before the handler returned", null));
        }
        try {
            long deadline = System.nanoTime() + wait.toNanos();
            if (!pool.awaitTermination(wait.toNanos(), TimeUnit.NANOSECONDS)
                    || !timer.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                log.warn("{}: a handler ignored its interruption and still runs after the handlers were closed", name);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static ThreadFactory threads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** One run of a handler: times itself out, classifies what it threw. */
    private final class Run implements Runnable {
        private final String what;
        private final Work work;
        private final CompletableFuture<Void> stage;
        private final CompletableFuture<Void> ended;
        private Thread thread; // guarded by this: the thread running the work, null when none

        Run(String what, Work work, CompletableFuture<Void> stage, CompletableFuture<Void> ended) {
            this.what = what;
            this.work = work;
            this.stage = stage;
            this.ended = ended;
        }

        @Override
        public void run() {
            if (stage.isDone()) { // failed by close() while it waited
                ended.complete(null);
                return;
            }
            synchronized (this) {
                thread = Thread.currentThread();
            }
            ScheduledFuture<?> deadline = schedule();
            try {
                work.run();
                stage.complete(null);
            } catch (PermanentFailureException e) {
                stage.completeExceptionally(DeliveryException.permanent(what + ": " + e.getMessage(), e));
            } catch (DeliveryException e) {
                stage.completeExceptionally(e);
            } catch (Exception | Error e) {
                stage.completeExceptionally(DeliveryException.retriable(what + " failed: " + e, e));
                if (e instanceof Error error && !(e instanceof AssertionError)) {
                    throw error;
                }
            } finally {
                if (deadline != null) {
                    deadline.cancel(false);
                }
                synchronized (this) {
                    thread = null;
                }
                Thread.interrupted(); // an interruption meant for this run ends with it
                ended.complete(null);
            }
        }

        private ScheduledFuture<?> schedule() {
            try {
                return timer.schedule(this::timedOut, timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException e) {
                return null; // closing: close() fails the stage and interrupts the thread
            }
        }

        private void timedOut() {
            if (stage.completeExceptionally(DeliveryException.retriable(what + " did not return within " + timeout
                    + " (handlerTimeout): its thread was interrupted", null))) {
                synchronized (this) {
                    if (thread != null) {
                        log.warn("{}: {} did not return within {}; interrupting it (its key waits until it returns)",
                                name, what, timeout);
                        thread.interrupt();
                    }
                }
            }
        }
    }
}
