package dev.outbox.it;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * One dispatcher's leader transport (a real {@code KafkaLeaderTransport}) that can be {@linkplain #freeze()
 * frozen}: from then on the group consumer is never polled again and no heartbeat is published, as if the
 * process had died. The group then drops the member when its {@code max.poll.interval.ms} runs out (the Kafka
 * client's background thread gives up the membership; a killed process would be dropped when
 * {@code session.timeout.ms} runs out — the scenario sets both to the same value), and no orderly revocation
 * happens.
 */
final class NodeTransport implements LeaderTransport {
    private final LeaderTransport delegate;
    private volatile boolean frozen;

    NodeTransport(LeaderTransport delegate) {
        this.delegate = delegate;
    }

    void freeze() {
        frozen = true;
    }

    @Override
    public void start(Listener listener) {
        delegate.start(listener);
    }

    @Override
    public void poll(Duration timeout) {
        if (frozen) {
            LockSupport.parkNanos(timeout.toNanos());
            return;
        }
        delegate.poll(timeout);
    }

    @Override
    public void publish(Heartbeat heartbeat) {
        if (!frozen) {
            delegate.publish(heartbeat);
        }
    }

    @Override
    public void close() {
        delegate.close();
    }
}
