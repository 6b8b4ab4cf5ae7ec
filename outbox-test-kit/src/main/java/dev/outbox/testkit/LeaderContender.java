package dev.outbox.testkit;

import dev.outbox.internal.NeliStateMachine;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.StorageFencing;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * One contender of a {@link LeaderTransportContract}: a thread that drives the core's {@link NeliStateMachine} over a
 * {@link LeaderTransport} as the dispatcher's leader thread does (poll, tick, publish), records every leadership
 * change in a shared {@link LeadershipTimeline} and, with storage fencing, takes the epoch on every acquisition as
 * the dispatcher does. Faults are injected around the transport: {@link #stall} stops polling it while the state
 * machine keeps ticking; {@link #pause} stops the whole loop (a SIGSTOP of the process, as the loop sees it);
 * {@link #crash} drops out without closing the transport.
 */
final class LeaderContender implements AutoCloseable {
    final String name;
    final LeaderTransport transport;
    private final Duration pollInterval;
    private final NeliStateMachine machine;
    private final StorageFencing fencing;
    private final Consumer<LeaderTransport> abandon;
    private final Thread thread;
    private final AtomicLong ownHeartbeatsSeen = new AtomicLong();
    private final AtomicLong polls = new AtomicLong();
    private volatile boolean stop;
    private volatile boolean crash;
    private volatile boolean stalled;
    private volatile boolean paused;
    private volatile boolean inPause;
    /** What to do first when resumed from a pause, on the contender's thread (as a resumed process would). */
    private volatile Runnable onResume;
    private volatile UUID leaderId;
    private volatile long epoch = -1;
    private volatile Throwable failure;

    LeaderContender(String name, LeaderTransport transport, LeadershipTimeline timeline, Duration heartbeatTimeout,
                    Duration pollInterval, StorageFencing fencing, Consumer<LeaderTransport> abandon) {
        this.name = name;
        this.transport = transport;
        this.pollInterval = pollInterval;
        this.fencing = fencing;
        this.abandon = abandon;
        this.machine = new NeliStateMachine(UUID.randomUUID(), heartbeatTimeout, pollInterval, System::nanoTime,
                new NeliStateMachine.Actions() {
                    @Override
                    public void acquired(UUID id) {
                        if (fencing != null) {
                            epoch = fencing.acquireEpoch(); // as the dispatcher does, before its first write
                        }
                        timeline.add(name, LeadershipTimeline.Kind.ACQUIRED, id);
                        leaderId = id;
                    }

                    @Override
                    public void fenced() {
                        leaderId = null;
                        timeline.add(name, LeadershipTimeline.Kind.FENCED, null);
                    }

                    @Override
                    public void revoked() {
                        leaderId = null;
                        timeline.add(name, LeadershipTimeline.Kind.REVOKED, null);
                    }

                    @Override
                    public boolean reconfirm() {
                        return transport.reconfirm();
                    }
                });
        this.thread = new Thread(() -> run(timeline), "contender-" + name);
        this.thread.setDaemon(true);
    }

    LeaderContender start() {
        thread.start();
        return this;
    }

    private void run(LeadershipTimeline timeline) {
        LeaderTransport.Listener listener = new LeaderTransport.Listener() {
            @Override
            public void assigned() {
                machine.assigned();
            }

            @Override
            public void revoked() {
                machine.revoked();
            }

            @Override
            public void lost() {
                machine.lost();
            }

            @Override
            public void heartbeat(Heartbeat heartbeat) {
                if (heartbeat.instanceId().equals(machine.instanceId())) {
                    ownHeartbeatsSeen.incrementAndGet();
                }
                machine.heartbeat(heartbeat);
            }

            @Override
            public void confirmed() {
                machine.confirmed();
            }
        };
        try {
            transport.start(listener);
            while (!stop) {
                if (paused) {
                    inPause = true;
                    while (paused && !stop) {
                        LockSupport.parkNanos(pollInterval.toNanos());
                    }
                    inPause = false;
                    Runnable first = onResume;
                    onResume = null;
                    if (first != null) {
                        first.run();
                    }
                    continue;
                }
                if (stalled) {
                    LockSupport.parkNanos(pollInterval.toNanos()); // the transport is not polled at all
                } else {
                    transport.poll(pollInterval);
                    machine.polled();
                    polls.incrementAndGet();
                }
                Heartbeat hb = machine.tick();
                if (hb != null) {
                    transport.publish(hb);
                }
            }
        } catch (Throwable e) {
            failure = e;
        } finally {
            if (leaderId != null) {
                leaderId = null;
                timeline.add(name, LeadershipTimeline.Kind.STOPPED, null);
            }
            if (crash) {
                abandon.accept(transport);
            } else {
                transport.close();
            }
        }
    }

    boolean isLeader() {
        return leaderId != null;
    }

    UUID leaderId() {
        return leaderId;
    }

    /** The epoch taken with the current or last leadership, or -1 (without fencing, or before the first). */
    long epoch() {
        return epoch;
    }

    /** Nanoseconds of NELI lease left at {@code nowNanos}; negative once lapsed, {@link Long#MIN_VALUE} without. */
    long leaseLeftNanos(long nowNanos) {
        return machine.leaseLeftNanos(nowNanos);
    }

    long polls() {
        return polls.get();
    }

    long ownHeartbeatsSeen() {
        return ownHeartbeatsSeen.get();
    }

    Throwable failure() {
        return failure;
    }

    void stall(boolean on) {
        stalled = on;
    }

    /** Stops the whole loop (no poll, no tick) until {@link #resume}; returns once it is paused. */
    void pause() {
        paused = true;
        Await.untilOrFail(() -> inPause, Duration.ofSeconds(10), () -> name + " pauses");
    }

    /** Resumes the loop, which first runs {@code first} (on its own thread), then goes on. */
    void resume(Runnable first) {
        onResume = first;
        paused = false;
    }

    /**
     * A fenced write as this contender's leadership makes it: a purge of an id that does not exist, fenced by the
     * epoch it took; what the store does about the fence is all it shows.
     */
    void fencedWrite() {
        fencing.fencedBy(epoch).purge(List.of(Long.MAX_VALUE));
    }

    /** Stops like a killed process: stops publishing, then drops its transport without closing it. */
    void crash() {
        crash = true;
        close();
    }

    boolean isRunning() {
        return thread.isAlive();
    }

    /** Stops the loop and closes the transport (the contender stops publishing first, as a dispatcher does). */
    @Override
    public void close() {
        stop = true;
        paused = false;
        try {
            thread.join(30_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            throw new AssertionError("contender " + name + " did not stop");
        }
    }

    @Override
    public String toString() {
        return name + (isLeader() ? "(leader)" : "");
    }
}
