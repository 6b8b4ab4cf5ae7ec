package dev.outbox.testkit;

import dev.outbox.OutboxMessage;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The in-memory encoding of a message an {@link InMemoryCommitLog} holds: the writer id, the topic, the key (or
 * none), the value (or none), then the headers (their count, then each name and value, or none). Stateless and
 * thread-safe.
 */
final class CommitLogCodec {
    private CommitLogCodec() {
    }

    /** Encodes {@code m} with the writer id it carries. */
    static byte[] encode(long writerId, OutboxMessage m) {
        try (ByteArrayOutputStream bytes = new ByteArrayOutputStream();
             DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeLong(writerId);
            out.writeUTF(m.topic());
            out.writeBoolean(m.key() != null);
            if (m.key() != null) {
                out.writeUTF(m.key());
            }
            writeBytes(out, m.value());
            out.writeInt(m.headers().size());
            for (dev.outbox.Header h : m.headers()) {
                out.writeUTF(h.name());
                writeBytes(out, h.value());
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Decodes {@link #encode}'s bytes; see {@link InMemoryCommitLog#decode}. */
    static InMemoryCommitLog.Decoded decode(byte[] payload) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(payload))) {
            long id = in.readLong();
            String topic = in.readUTF();
            String key = in.readBoolean() ? in.readUTF() : null;
            OutboxMessage.Builder message = OutboxMessage.builder(topic, key).value(readBytes(in));
            for (int h = in.readInt(); h > 0; h--) {
                message.header(in.readUTF(), readBytes(in));
            }
            return new InMemoryCommitLog.Decoded(id, message.build());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException {
        out.writeInt(bytes == null ? -1 : bytes.length);
        if (bytes != null) {
            out.write(bytes);
        }
    }

    private static byte[] readBytes(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < -1) {
            throw new IOException("negative length " + n);
        }
        byte[] bytes = n < 0 ? null : in.readNBytes(n);
        if (bytes != null && bytes.length < n) {
            throw new IOException("truncated: " + bytes.length + " of " + n + " bytes");
        }
        return bytes;
    }
}
