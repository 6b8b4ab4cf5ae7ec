package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherListener;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * The leader thread ({@code <name>-leader}): drives the leader transport and the {@link NeliStateMachine}, carries
 * out what the machine decides (acquired, fenced, revoked) on the {@link EngineState}, tells the observers when the
 * health status changed, and emits the meter readings. The only thread that acquires leadership; a stop may also
 * come from close.
 */
final class LeaderLoop implements Runnable, NeliStateMachine.Actions {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    private final String name;
    private final DispatcherConfig config;
    private final EngineRuntime runtime;
    private final LeaderTransport transport;
    private final EngineState state;
    private final EngineEvents events;
    private final NeliStateMachine machine;
    private final Supplier<Dispatcher.State> lifecycle;
    private Sender sender;
    private volatile boolean stopping;
    /** Set when the dispatcher begins to close: a leadership offered from then on is not taken. */
    private volatile boolean closing;

    LeaderLoop(String name, DispatcherConfig config, EngineRuntime runtime, LeaderTransport transport,
               EngineState state, EngineEvents events, Supplier<UUID> ids, Supplier<Dispatcher.State> lifecycle) {
        this.name = name;
        this.config = config;
        this.runtime = runtime;
        this.transport = transport;
        this.state = state;
        this.events = events;
        this.lifecycle = lifecycle;
        this.machine = new NeliStateMachine(runtime.randomUuid(), config.heartbeatTimeout(), config.pollInterval(),
                runtime::nanoTime, this, ids);
    }

    /** The sender this loop stops when leadership ends; set once, before the thread starts. */
    void sender(Sender sender) {
        this.sender = sender;
    }

    /**
     * Whether the leadership lease (last own heartbeat + heartbeat timeout) still holds, on the monotonic clock: a
     * step of the wall clock changes nothing.
     */
    boolean leaseValid() {
        return machine.leaseValid(runtime.nanoTime());
    }

    /** The dispatcher begins to close: no leadership is taken any more. */
    void closing() {
        closing = true;
    }

    /** Ends the loop after its poll under way; the caller joins the thread. */
    void stop() {
        stopping = true;
    }

    @Override
    public void run() {
        EngineEvents.Meter meter = events.new Meter();
        try {
            transport.start(machine);
            while (!stopping) {
                transport.poll(config.pollInterval());
                machine.polled();
                events.health.electionJoined();
                if (machine.role() == NeliStateMachine.Role.STANDBY) {
                    standby();
                }
                Heartbeat hb = machine.tick();
                if (hb != null) {
                    transport.publish(hb);
                }
                reportStatus();
                meter.tick(config.metricsInterval(), false, state::inFlight);
            }
            meter.tick(config.metricsInterval(), true, state::inFlight); // a last read, covering the drain on close
        } finally {
            try {
                transport.close();
            } catch (RuntimeException e) {
                log.warn("{}: closing the leader transport failed", name, e);
            }
            sender.stopPublishing();
        }
    }

    /**
     * Tells the observers when the health status changed. Called by this thread after each poll (every leadership
     * change happens on it) and, once it has ended, by close: never by two threads at once.
     */
    void reportStatus() {
        DispatcherHealth.Status now = events.health.changedStatus(lifecycle.get());
        if (now != null) {
            events.callbacks.statusChanged(now);
        }
    }

    /**
     * Not assigned the leader partition: a fenced instance whose assignment was lost or revoked meanwhile (a paused
     * process resumed after the group moved on) is a standby again, ready to lead when the group assigns it anew,
     * instead of reporting FENCED until it is closed.
     */
    private void standby() {
        if (events.health.unfenced()) {
            log.info("{}: no longer fenced: the group moved the leadership on; standing by to lead again", name);
        }
    }

    @Override
    public void acquired(UUID id) {
        if (closing) {
            return;
        }
        state.acquired(id);
        events.health.leading(id);
        log.info("{}: leader acquired, leader id {}", name, id);
        events.listener("leaderAcquired", l -> l.leaderAcquired(id));
    }

    @Override
    public void fenced() {
        if (sender.stopPublishing()) {
            events.health.fenced(true);
            log.warn("{}: leader fenced: stopped publishing", name);
            events.listener("leaderFenced", DispatcherListener::leaderFenced);
        }
    }

    @Override
    public void revoked() {
        boolean was = sender.stopPublishing();
        Duration drain = runtime.protocolOrder().handoverDrain(config.drainTimeout());
        boolean all = state.awaitDrained(runtime.nanoTime() + drain.toNanos());
        if (!all) {
            log.warn("{}: leadership revoked with {} records still in flight after {}", name, state.inFlight(),
                    config.drainTimeout());
        }
        if (was) {
            events.health.fenced(false);
            log.info("{}: leader revoked", name);
            events.listener("leaderRevoked", DispatcherListener::leaderRevoked);
        }
    }

    @Override
    public boolean reconfirm() {
        try {
            return transport.reconfirm();
        } catch (RuntimeException e) {
            log.warn("{}: the leader transport could not reconfirm the assignment; trusting its next poll", name, e);
            return false;
        }
    }
}
