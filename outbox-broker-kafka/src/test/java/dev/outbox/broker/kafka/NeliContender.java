package dev.outbox.broker.kafka;

import dev.outbox.internal.NeliStateMachine;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.testkit.LeadershipTimeline;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * One NELI contender: a thread that drives the core's {@link NeliStateMachine} over a real
 * {@link KafkaLeaderTransport} exactly as the dispatcher's leader thread does (poll, tick, publish), recording
 * every leadership change in a shared {@link LeadershipTimeline}. Faults are injected around the transport, never
 * inside Kafka: {@link #stall} stops polling the consumer while the state machine keeps ticking, {@link #deafen}
 * drops received heartbeats, {@link #crash} drops out without leaving the group.
 */
final class NeliContender implements AutoCloseable {
    final String name;
    final KafkaLeaderTransport transport;
    private final LeadershipTimeline timeline;
    private final Duration pollInterval;
    private final NeliStateMachine machine;
    private final Thread thread;
    private final AtomicLong ownHeartbeatsSeen = new AtomicLong();
    private final AtomicLong polls = new AtomicLong();
    private volatile boolean stop;
    private volatile boolean crash;
    private volatile boolean stalled;
    private volatile boolean deaf;
    private volatile UUID leaderId;
    private volatile Throwable failure;

    NeliContender(String name, KafkaLeaderTransport transport, LeadershipTimeline timeline, Duration heartbeatTimeout,
                  Duration pollInterval) {
        this.name = name;
        this.transport = transport;
        this.timeline = timeline;
        this.pollInterval = pollInterval;
        UUID instanceId = UUID.randomUUID();
        this.machine = new NeliStateMachine(instanceId, heartbeatTimeout, pollInterval, System::nanoTime,
                new NeliStateMachine.Actions() {
                    @Override
                    public void acquired(UUID id) {
                        // recorded before it shows: whoever sees isLeader() finds the event in the timeline
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
                });
        this.thread = new Thread(this::run, "neli-" + name);
        this.thread.setDaemon(true);
    }

    NeliContender start() {
        thread.start();
        return this;
    }

    private void run() {
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
                if (deaf) {
                    return;
                }
                if (heartbeat.instanceId().equals(machine.instanceId())) {
                    ownHeartbeatsSeen.incrementAndGet();
                }
                machine.heartbeat(heartbeat);
            }
        };
        try {
            transport.start(listener);
            while (!stop) {
                if (stalled) {
                    LockSupport.parkNanos(pollInterval.toNanos()); // the consumer is not polled at all
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
                transport.abandon();
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

    void deafen(boolean on) {
        deaf = on;
    }

    /** Stops like a killed process: stops publishing, then drops its clients without leaving the group. */
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
