package dev.outbox.internal;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The "always leader" transport for a single dispatcher: assigned as soon as it starts, and every heartbeat
 * comes straight back. Runs the same NELI state machine as a real transport, so single-instance and
 * clustered dispatchers share one code path. Used from the dispatcher's leader thread only.
 */
public final class SingleInstanceTransport implements LeaderTransport {
    private final BlockingQueue<Heartbeat> echoes = new LinkedBlockingQueue<>();
    private Listener listener;
    private boolean assignedDelivered;

    @Override
    public void start(Listener listener) {
        this.listener = listener;
    }

    @Override
    public void poll(Duration timeout) {
        if (!assignedDelivered) {
            assignedDelivered = true;
            listener.assigned();
        }
        try {
            Heartbeat hb = echoes.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
            while (hb != null) {
                listener.heartbeat(hb);
                hb = echoes.poll();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void publish(Heartbeat heartbeat) {
        echoes.add(heartbeat);
    }

    @Override
    public void close() {
        echoes.clear();
    }
}
