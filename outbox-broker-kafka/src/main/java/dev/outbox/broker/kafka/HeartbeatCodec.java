package dev.outbox.broker.kafka;

import dev.outbox.spi.Heartbeat;

import java.nio.ByteBuffer;
import java.util.UUID;

/**
 * The wire form of a {@link Heartbeat} on the leader topic: one version byte (1), the instance id's two longs,
 * the sequence; 25 bytes, big-endian. Stateless and thread-safe.
 */
final class HeartbeatCodec {
    static final byte VERSION = 1;
    static final int SIZE = 1 + 16 + 8;

    private HeartbeatCodec() {
    }

    static byte[] encode(Heartbeat heartbeat) {
        return ByteBuffer.allocate(SIZE)
                .put(VERSION)
                .putLong(heartbeat.instanceId().getMostSignificantBits())
                .putLong(heartbeat.instanceId().getLeastSignificantBits())
                .putLong(heartbeat.sequence())
                .array();
    }

    /** The heartbeat in {@code bytes}, or null if they are not one (another writer, another version). */
    static Heartbeat decode(byte[] bytes) {
        if (bytes == null || bytes.length != SIZE || bytes[0] != VERSION) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(bytes, 1, SIZE - 1);
        UUID id = new UUID(b.getLong(), b.getLong());
        return new Heartbeat(id, b.getLong());
    }
}
