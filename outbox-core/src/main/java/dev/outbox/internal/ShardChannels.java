package dev.outbox.internal;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.ShardedLeaderTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Splits one {@link ShardedLeaderTransport} into a {@link LeaderTransport} per shard, so that each shard's harvest
 * runs the unsharded engine and its own NELI timeline unchanged. One worker (the shard poller, {@link #run()})
 * polls the sharded transport and queues each event for its shard; a shard's view delivers its events on the
 * shard's own leader thread, from inside {@link LeaderTransport#poll}, as the {@link LeaderTransport} contract
 * says. An orderly revocation blocks the poller until every revoked shard's leader thread has handled it (drained
 * its in-flight records), or the wait's bound passed; the shards revoked together drain in parallel.
 *
 * <p>A shard whose dispatcher closed acknowledges revocations at once: nothing of it is in flight any more.
 */
final class ShardChannels implements ShardedLeaderTransport.Listener {
    private static final Logger log = LoggerFactory.getLogger(ShardChannels.class);
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final String name;
    private final ShardedLeaderTransport transport;
    private final EngineRuntime runtime;
    private final long revokeWaitNanos;
    private final Duration failureBackoff;
    private final List<View> views = new ArrayList<>();
    private final Latch stopped;
    private volatile boolean stopping;

    ShardChannels(String name, ShardedLeaderTransport transport, EngineRuntime runtime, Duration revokeWait,
                  Duration failureBackoff) {
        this.name = name;
        this.transport = transport;
        this.runtime = runtime;
        this.revokeWaitNanos = revokeWait.toNanos();
        this.failureBackoff = failureBackoff;
        this.stopped = new Latch(runtime);
        for (int i = 0; i < transport.shards(); i++) {
            views.add(new View(i));
        }
    }

    /** The leader transport of shard {@code index}. */
    LeaderTransport shard(int index) {
        return views.get(index);
    }

    /** The poller's body: joins the group and polls until {@link #stop()}. */
    void run() {
        transport.start(this);
        while (!stopping) {
            try {
                transport.poll(Duration.ofNanos(POLL_NANOS));
            } catch (RuntimeException e) {
                if (stopping) {
                    return;
                }
                log.warn("{}: polling the shard leader transport failed; retrying in {}", name, failureBackoff, e);
                try {
                    stopped.await(failureBackoff.toNanos());
                } catch (InterruptedException ie) {
                    return;
                }
            }
            if (Thread.currentThread().isInterrupted() && stopping) {
                return;
            }
        }
    }

    /** Makes {@link #run()} return after its current poll. */
    void stop() {
        stopping = true;
        stopped.open();
    }

    @Override
    public void assigned(Set<Integer> shards) {
        for (int s : shards) {
            view(s).events.add(Event.ASSIGNED);
        }
    }

    @Override
    public void revoked(Set<Integer> shards) {
        List<Revocation> waits = new ArrayList<>();
        for (int s : shards) {
            View v = view(s);
            Revocation r = new Revocation(new Latch(runtime));
            v.events.add(r);
            if (v.closed) {
                r.done.open(); // closed before or while we queued: it has nothing in flight
            }
            waits.add(r);
        }
        long deadline = runtime.nanoTime() + revokeWaitNanos;
        try {
            for (Revocation r : waits) {
                if (!r.done.await(Math.max(1, deadline - runtime.nanoTime()))) {
                    log.warn("{}: shards {} did not finish draining within {} ms of their revocation", name, shards,
                            TimeUnit.NANOSECONDS.toMillis(revokeWaitNanos));
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void lost(Set<Integer> shards) {
        for (int s : shards) {
            view(s).events.add(Event.LOST);
        }
    }

    @Override
    public void heartbeat(int shard, Heartbeat heartbeat) {
        View v = view(shard);
        if (!v.closed) {
            v.events.add(heartbeat);
        }
    }

    @Override
    public void confirmed(Set<Integer> shards) {
        for (int s : shards) {
            View v = view(s);
            if (!v.closed) {
                v.events.add(Event.CONFIRMED);
            }
        }
    }

    private View view(int shard) {
        if (shard < 0 || shard >= views.size()) {
            throw new IllegalArgumentException("the leader transport reported shard " + shard + " of "
                    + views.size());
        }
        return views.get(shard);
    }

    private enum Event { ASSIGNED, LOST, CONFIRMED }

    private record Revocation(Latch done) {
    }

    /** One shard's transport: its events, delivered on its leader thread. */
    private final class View implements LeaderTransport {
        private final int index;
        private final WorkQueue<Object> events = new WorkQueue<>(runtime);
        private final List<Object> batch = new ArrayList<>();
        private Listener listener;
        private volatile boolean closed;

        View(int index) {
            this.index = index;
        }

        @Override
        public void start(Listener listener) {
            this.listener = listener;
        }

        @Override
        public void poll(Duration timeout) {
            try {
                Object first = events.poll(timeout.toNanos());
                if (first == null) {
                    return;
                }
                deliver(first);
                batch.clear();
                events.drainTo(batch, Integer.MAX_VALUE);
                for (Object e : batch) {
                    deliver(e);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private void deliver(Object event) {
            if (event instanceof Heartbeat hb) {
                listener.heartbeat(hb);
            } else if (event == Event.ASSIGNED) {
                listener.assigned();
            } else if (event == Event.LOST) {
                listener.lost();
            } else if (event == Event.CONFIRMED) {
                listener.confirmed();
            } else if (event instanceof Revocation r) {
                try {
                    listener.revoked();
                } finally {
                    r.done.open();
                }
            }
        }

        @Override
        public void publish(Heartbeat heartbeat) {
            transport.publish(index, heartbeat);
        }

        /** The whole membership is reconfirmed; every shard still owned hears {@code confirmed}. */
        @Override
        public boolean reconfirm() {
            return transport.reconfirm();
        }

        @Override
        public void close() {
            closed = true;
            batch.clear();
            events.drainTo(batch, Integer.MAX_VALUE);
            for (Object e : batch) {
                if (e instanceof Revocation r) {
                    r.done.open();
                }
            }
        }

        @Override
        public String toString() {
            return "shard " + index + " of " + transport;
        }
    }
}
