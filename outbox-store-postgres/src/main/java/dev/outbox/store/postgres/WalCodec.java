package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.RowChecks;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The binary encoding of one outbox message as the content of a transactional logical message in the Postgres
 * write-ahead log ({@code pg_logical_emit_message(true, prefix, content)}): what the WAL harvest's publisher
 * writes and its stream decodes. It is a public contract: a writer in any language may produce it (or call the
 * SQL function {@code <table>_wal_encode}, which {@link WalSql} creates and which produces the same bytes).
 *
 * <h2>Format, version 1</h2>
 * All integers are signed, big-endian (network order, as Postgres' {@code int4send} writes them); all strings
 * are UTF-8 without a terminator.
 * <pre>
 * byte    format version: 1
 * 16 B    message id: a UUID, its most significant 8 bytes then its least significant 8 bytes
 *         (Postgres' uuid_send; the outbox writes version 7 ids, any UUID is accepted)
 * int32   topic length in bytes, then the topic
 * int32   key length in bytes, then the key
 * int32   value length in bytes, or -1 for a tombstone (a null value); then the value's bytes
 * int32   header count; then, per header, in order (names may repeat):
 *           int32 name length in bytes (at least 1), then the name
 *           int32 value length in bytes, or -1 for a null value; then the value's bytes
 * </pre>
 * The content ends with the last header: trailing bytes make it invalid. A message of an unknown version is
 * invalid to this reader (a later version may add fields; a reader must not guess at them).
 *
 * <h2>Validation</h2>
 * A decoded message is checked as a row of the outbox table is ({@link RowChecks}, {@link OutboxMessage}): a
 * valid topic (non-blank, at most {@value OutboxMessage#MAX_TOPIC_LENGTH} characters, no whitespace or control
 * character), a key of at most the store's {@code maxKeyLength} code points, non-empty header names. Since a
 * message that cannot be published is kept in the parked table, whose {@code text} columns cannot hold the
 * character U+0000, a key or header name containing it is invalid too (the publisher refuses to write one, as in
 * table mode). Strings must be well-formed UTF-8 (no overlong forms, no encoded surrogates).
 *
 * <p>Stateless and thread-safe; a utility class.
 */
final class WalCodec {
    /** The format version {@link #encode} writes and {@link #decode} reads. */
    static final byte VERSION = 1;

    /** Version byte + message id: what comes before the topic. */
    private static final int FIXED_HEAD = 1 + 16;

    private WalCodec() {
    }

    /**
     * The outcome of {@link #decode}: a message and its id, or an error saying what is wrong with the content.
     *
     * @param message   the decoded message, validated; null if {@code error} is set
     * @param messageId the message's id; also set with an error if the content was long enough to hold it (so that
     *                  a parked copy of an invalid message may keep it), null otherwise
     * @param error     null for a valid message, else what makes the content invalid, naming the field
     */
    record Decoded(OutboxMessage message, UUID messageId, String error) {
        Decoded {
            if ((message == null) == (error == null)) {
                throw new IllegalArgumentException("exactly one of message and error must be set");
            }
        }

        /** Whether the content was a valid message. */
        boolean isValid() {
            return error == null;
        }
    }

    /**
     * Encodes {@code message} with {@code messageId} in format version 1.
     *
     * @throws IllegalArgumentException if a string of the message (topic, key, header name) is not valid Unicode
     *                                  (an unpaired surrogate), naming it; UTF-8 cannot carry it
     * @throws NullPointerException     if an argument is null
     */
    static byte[] encode(OutboxMessage message, UUID messageId) {
        Objects.requireNonNull(message, "message must not be null");
        Objects.requireNonNull(messageId, "messageId must not be null");
        byte[] topic = utf8("topic", message.topic());
        byte[] key = utf8("key", message.key());
        List<Header> headers = message.headers();
        byte[][] names = new byte[headers.size()][];
        byte[][] values = new byte[headers.size()][];
        int size = FIXED_HEAD + 4 + topic.length + 4 + key.length + 4 + message.valueSize() + 4;
        for (int i = 0; i < names.length; i++) {
            Header header = headers.get(i);
            names[i] = utf8("header " + i + " name", header.name());
            values[i] = header.value();
            size = Math.addExact(size, 8 + names[i].length + (values[i] == null ? 0 : values[i].length));
        }
        ByteBuffer out = ByteBuffer.allocate(size); // big-endian by default
        out.put(VERSION);
        out.putLong(messageId.getMostSignificantBits());
        out.putLong(messageId.getLeastSignificantBits());
        out.putInt(topic.length).put(topic);
        out.putInt(key.length).put(key);
        putNullable(out, message.value());
        out.putInt(names.length);
        for (int i = 0; i < names.length; i++) {
            out.putInt(names[i].length).put(names[i]);
            putNullable(out, values[i]);
        }
        return out.array();
    }

    /**
     * Decodes {@code content}; never throws for bad content: an invalid message is returned as a {@link Decoded}
     * whose {@code error} names the problem (unknown version, a truncated field, trailing bytes, a negative
     * length, malformed UTF-8, an empty header name, an invalid topic or key).
     *
     * @param content      what the writer emitted
     * @param maxKeyLength the store's longest key, in code points ({@code PostgresStore.maxKeyLength()})
     * @throws NullPointerException if {@code content} is null
     */
    static Decoded decode(byte[] content, int maxKeyLength) {
        Objects.requireNonNull(content, "content must not be null");
        Reader in = new Reader(content);
        UUID messageId = null;
        try {
            if (content.length == 0) {
                throw new Invalid("empty content: no format version");
            }
            byte version = content[0];
            in.position = 1;
            if (version != VERSION) {
                throw new Invalid("unknown format version " + (version & 0xFF) + " (this reader knows version "
                        + VERSION + ")");
            }
            in.need(16, "message id");
            messageId = new UUID(in.getLong(), in.getLong());
            String topic = in.string("topic");
            String key = in.string("key");
            byte[] value = in.nullableBytes("value");
            int count = in.getInt("header count");
            if (count < 0) {
                throw new Invalid("negative header count " + count);
            }
            // Each header takes at least 9 bytes (a 1-byte name), which bounds what a bad count can allocate.
            List<Header> headers = new ArrayList<>(Math.min(count, in.remaining() / 9));
            for (int i = 0; i < count; i++) {
                String name = in.string("header " + i + " name");
                if (name.isEmpty()) {
                    throw new Invalid("header " + i + " name is empty");
                }
                noNul("header " + i + " name", name);
                headers.add(Header.of(name, in.nullableBytes("header " + i + " value")));
            }
            if (in.remaining() > 0) {
                throw new Invalid(in.remaining() + " trailing byte(s) after the last header (at offset "
                        + in.position + " of " + content.length + ")");
            }
            noNul("key", key);
            RowChecks.checkKeyLength(key, maxKeyLength);
            return new Decoded(OutboxMessage.of(topic, key, value, headers), messageId, null);
        } catch (Invalid | IllegalArgumentException e) {
            return new Decoded(null, messageId, e.getMessage());
        }
    }

    private static void putNullable(ByteBuffer out, byte[] bytes) {
        if (bytes == null) {
            out.putInt(-1);
        } else {
            out.putInt(bytes.length).put(bytes);
        }
    }

    /** {@code value} in UTF-8; refuses an unpaired surrogate, which {@link String#getBytes} would turn into '?'. */
    private static byte[] utf8(String what, String value) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < value.length()
                        && Character.isLowSurrogate(value.charAt(i + 1))) {
                    i++;
                } else {
                    throw new IllegalArgumentException(what + " " + RowChecks.abbreviate(value)
                            + " contains an unpaired surrogate at index " + i + ", which UTF-8 cannot encode");
                }
            }
        }
        return value.getBytes(StandardCharsets.UTF_8);
    }

    private static void noNul(String what, String value) {
        int at = value.indexOf('\u0000');
        if (at >= 0) {
            throw new Invalid(what + " " + RowChecks.abbreviate(value.replace("\u0000", "\\u0000"))
                    + " contains the character U+0000 at index " + at + ", which Postgres text cannot store");
        }
    }

    /** What makes content invalid; never leaves {@link #decode}. */
    private static final class Invalid extends RuntimeException {
        Invalid(String message) {
            super(message, null, false, false);
        }
    }

    /** A cursor over the content; every read checks the bytes are there first. */
    private static final class Reader {
        private final byte[] content;
        /** Created at the first string that is not ASCII. */
        private CharsetDecoder utf8;
        private int position;

        Reader(byte[] content) {
            this.content = content;
        }

        int remaining() {
            return content.length - position;
        }

        void need(int bytes, String field) {
            if (remaining() < bytes) {
                throw new Invalid("truncated: the " + field + " needs " + bytes + " byte(s) at offset " + position
                        + ", " + remaining() + " remain (content of " + content.length + " bytes)");
            }
        }

        long getLong() {
            long value = 0;
            for (int i = 0; i < 8; i++) {
                value = value << 8 | (content[position++] & 0xFF);
            }
            return value;
        }

        int getInt(String field) {
            need(4, field);
            int value = (content[position] & 0xFF) << 24 | (content[position + 1] & 0xFF) << 16
                    | (content[position + 2] & 0xFF) << 8 | (content[position + 3] & 0xFF);
            position += 4;
            return value;
        }

        /** A length-prefixed byte string; length -1 is null. */
        byte[] nullableBytes(String field) {
            int length = getInt(field + " length");
            if (length == -1) {
                return null;
            }
            if (length < 0) {
                throw new Invalid("negative " + field + " length " + length + " (only -1, for null, is allowed)");
            }
            need(length, field);
            byte[] bytes = new byte[length];
            System.arraycopy(content, position, bytes, 0, length);
            position += length;
            return bytes;
        }

        /** A length-prefixed UTF-8 string, never null. */
        String string(String field) {
            int length = getInt(field + " length");
            if (length == -1) {
                throw new Invalid("the " + field + " is null (length -1)");
            }
            if (length < 0) {
                throw new Invalid("negative " + field + " length " + length);
            }
            need(length, field);
            int start = position;
            position += length;
            // ASCII, the common case, needs no validation.
            boolean ascii = true;
            for (int i = start; i < position; i++) {
                if (content[i] < 0) {
                    ascii = false;
                    break;
                }
            }
            if (ascii) {
                return new String(content, start, length, StandardCharsets.ISO_8859_1);
            }
            if (utf8 == null) {
                utf8 = StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT);
            }
            try {
                CharBuffer chars = utf8.reset().decode(ByteBuffer.wrap(content, start, length));
                return chars.toString();
            } catch (CharacterCodingException e) {
                throw new Invalid("the " + field + " is not valid UTF-8 (" + length + " bytes at offset " + start
                        + ")");
            }
        }
    }
}
