package dev.outbox.spi;

import java.util.Objects;
import java.util.UUID;

/**
 * A NELI heartbeat: the leader publishes one every poll interval and consumes its own to prove that it is
 * still connected and still owns the leader partition.
 *
 * @param instanceId the sending dispatcher's instance id (fixed for the life of the dispatcher)
 * @param sequence   increasing per sender; lets a receiver ignore stale heartbeats
 */
public record Heartbeat(UUID instanceId, long sequence) {
    /**
     * Checks the components.
     *
     * @param instanceId the sending dispatcher's instance id; not null
     * @param sequence   the sender's sequence number
     * @throws NullPointerException if {@code instanceId} is null
     */
    public Heartbeat {

        Objects.requireNonNull(instanceId, "instanceId");
    }
}
