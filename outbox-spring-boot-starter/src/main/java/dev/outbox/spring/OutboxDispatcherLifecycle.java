package dev.outbox.spring;

import dev.outbox.Dispatcher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;

import java.util.Objects;

/**
 * Runs the application's {@link Dispatcher} with the Spring context: starts it once the context is refreshed
 * (every singleton, the {@code DataSource} and the migrations included, is ready by then), and closes it in the
 * shutdown phase, draining in-flight records for at most {@code outbox.dispatcher.drain-timeout}. Its phase is
 * below the web server's, so at shutdown the web server stops taking requests first and the dispatcher still
 * publishes what the last requests committed, and the dispatcher stops before the {@code DataSource} is closed.
 *
 * <p>A dispatcher runs once: after {@link #stop()} (a context stop or close) it cannot be started again.
 * Thread-safe.
 */
public final class OutboxDispatcherLifecycle implements SmartLifecycle, DisposableBean {
    /**
     * Start early, stop late: below the web server's graceful-shutdown phase
     * ({@code SmartLifecycle.DEFAULT_PHASE - 2048}).
     */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcherLifecycle.class);

    private final Dispatcher dispatcher;

    /**
     * A lifecycle for {@code dispatcher}.
     *
     * @param dispatcher the application's dispatcher, normally built and not yet started; not {@code null}. This
     *                   lifecycle starts it (unless it already runs) and closes it.
     * @throws NullPointerException if {@code dispatcher} is {@code null}
     */
    public OutboxDispatcherLifecycle(Dispatcher dispatcher) {
        this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher");
    }

    /**
     * The dispatcher this lifecycle runs.
     *
     * @return the dispatcher given to the constructor, for its health, state and statistics
     */
    public Dispatcher dispatcher() {
        return dispatcher;
    }

    @Override
    public synchronized void start() {
        if (dispatcher.state() == Dispatcher.State.NEW) {
            dispatcher.start();
            return;
        }
        if (dispatcher.state() != Dispatcher.State.RUNNING) {
            throw new IllegalStateException("the outbox dispatcher was stopped (" + dispatcher.state()
                    + ") and cannot run again in this application context");
        }
    }

    @Override
    public synchronized void stop() {
        if (dispatcher.state() == Dispatcher.State.RUNNING) {
            log.info("Closing the outbox dispatcher (draining in-flight records)");
        }
        dispatcher.close();
    }

    @Override
    public boolean isRunning() {
        return dispatcher.state() == Dispatcher.State.RUNNING;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    /** Closes a dispatcher that never started (a context that failed to refresh); idempotent. */
    @Override
    public void destroy() {
        dispatcher.close();
    }

    @Override
    public String toString() {
        return "OutboxDispatcherLifecycle{" + dispatcher.state() + '}';
    }
}
