package dev.outbox.store.postgres;

import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The WAL message format, in Java: round trips, the exact bytes, and what decoding says of bad content. */
class WalCodecTest {
    private static final UUID ID = UUID.fromString("0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6071");
    private static final int NO_LIMIT = Integer.MAX_VALUE;

    @Test
    void everyFieldSurvivesARoundTrip() {
        for (Map.Entry<String, OutboxMessage> entry : WalTestMessages.all().entrySet()) {
            UUID id = MessageIds.next();
            WalCodec.Decoded decoded = WalCodec.decode(WalCodec.encode(entry.getValue(), id), NO_LIMIT);

            assertThat(decoded.error()).as(entry.getKey()).isNull();
            assertThat(decoded.isValid()).as(entry.getKey()).isTrue();
            assertThat(decoded.message()).as(entry.getKey()).isEqualTo(entry.getValue());
            assertThat(decoded.message().isTombstone()).as(entry.getKey()).isEqualTo(entry.getValue().isTombstone());
            assertThat(decoded.messageId()).as(entry.getKey()).isEqualTo(id);
        }
    }

    @Test
    void theBytesAreThoseTheFormatDocuments() {
        OutboxMessage message = OutboxMessage.builder("t", "ké").value(new byte[]{7})
                .header("h", (byte[]) null).header("i", new byte[]{1, 2}).build();

        assertThat(HexFormat.of().formatHex(WalCodec.encode(message, ID))).isEqualTo(""
                + "01"                                      // version
                + "0192f3c45d6e7f809a1b2c3d4e5f6071"        // message id
                + "00000001" + "74"                         // topic "t"
                + "00000003" + "6bc3a9"                     // key "ké" in UTF-8
                + "00000001" + "07"                         // value
                + "00000002"                                // two headers
                + "00000001" + "68" + "ffffffff"            // "h", null value
                + "00000001" + "69" + "00000002" + "0102"); // "i", two bytes
        assertThat(HexFormat.of().formatHex(WalCodec.encode(OutboxMessage.tombstone("t", "k"), ID)))
                .isEqualTo("01" + "0192f3c45d6e7f809a1b2c3d4e5f6071" + "0000000174" + "000000016b" + "ffffffff"
                        + "00000000");
    }

    @Test
    void encodingRefusesAStringUtf8CannotCarry() {
        assertThatThrownBy(() -> WalCodec.encode(OutboxMessage.of("t", "a\uD800b", "v"), ID))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("key 'a\uD800b' contains an unpaired surrogate at index 1, which UTF-8 cannot encode");
        assertThatThrownBy(() -> WalCodec.encode(OutboxMessage.builder("t", "k").header("x\uDC00", "v").build(), ID))
                .hasMessageStartingWith("header 0 name ");
        assertThat(WalCodec.decode(WalCodec.encode(OutboxMessage.of("t", "🔑\uD83D\uDE00", "v"), ID), NO_LIMIT)
                .message().key()).isEqualTo("🔑😀");
    }

    @Test
    void everyTruncationIsNamedNeverThrown() {
        byte[] full = WalCodec.encode(WalTestMessages.all().get("null and repeated header values"), ID);
        for (int length = 0; length < full.length; length++) {
            WalCodec.Decoded decoded = WalCodec.decode(Arrays.copyOf(full, length), NO_LIMIT);
            assertThat(decoded.message()).as("length %d", length).isNull();
            assertThat(decoded.error()).as("length %d", length).matches(length == 0
                    ? "empty content: no format version"
                    : "truncated: the (message id|topic|topic length|key|key length|value|value length|header count"
                    + "|header \\d (name|name length|value|value length)) needs \\d+ byte\\(s\\) at offset \\d+,"
                    + " \\d+ remain \\(content of " + length + " bytes\\)");
            assertThat(decoded.messageId()).as("length %d", length).isEqualTo(length >= 17 ? ID : null);
        }
        assertThat(WalCodec.decode(Arrays.copyOf(full, 20), NO_LIMIT).error())
                .isEqualTo("truncated: the topic length needs 4 byte(s) at offset 17, 3 remain (content of 20 bytes)");
    }

    @Test
    void badContentIsNamed() {
        assertThat(error(new byte[]{2})).isEqualTo("unknown format version 2 (this reader knows version 1)");
        assertThat(error(new byte[]{(byte) 0xff, 0})).isEqualTo("unknown format version 255 (this reader knows"
                + " version 1)");

        byte[] valid = WalCodec.encode(OutboxMessage.of("t", "k", "v"), ID);
        assertThat(error(Arrays.copyOf(valid, valid.length + 2)))
                .isEqualTo("2 trailing byte(s) after the last header (at offset 36 of 38)");

        assertThat(error(content(b -> b.str("t").len(-5)))).isEqualTo("negative key length -5");
        assertThat(error(content(b -> b.len(-1)))).isEqualTo("the topic is null (length -1)");
        assertThat(error(content(b -> b.str("t").len(-1)))).isEqualTo("the key is null (length -1)");
        assertThat(error(content(b -> b.str("t").str("k").len(-2))))
                .isEqualTo("negative value length -2 (only -1, for null, is allowed)");
        assertThat(error(content(b -> b.str("t").str("k").len(-1).len(-3)))).isEqualTo("negative header count -3");
        assertThat(error(content(b -> b.str("t").str("k").len(-1).len(2).str("a").len(-1).str("").len(-1))))
                .isEqualTo("header 1 name is empty");
        assertThat(error(content(b -> b.str("t").str("k").len(-1).len(1).len(-1))))
                .isEqualTo("the header 0 name is null (length -1)");
        assertThat(error(content(b -> b.str("t").str("k").len(-1).len(1).str("a").len(-7))))
                .isEqualTo("negative header 0 value length -7 (only -1, for null, is allowed)");
        // A count far beyond the content allocates nothing and says the content is short.
        assertThat(error(content(b -> b.str("t").str("k").len(-1).len(Integer.MAX_VALUE))))
                .startsWith("truncated: the header 0 name length needs 4 byte(s)");
        assertThat(error(content(b -> b.len(Integer.MAX_VALUE))))
                .isEqualTo("truncated: the topic needs 2147483647 byte(s) at offset 21, 0 remain (content of 21"
                        + " bytes)");
    }

    @Test
    void malformedUtf8IsNamed() {
        byte[][] malformed = {
                {(byte) 0xc3},                          // a lead byte without its continuation
                {(byte) 0x80},                          // a continuation without a lead byte
                {(byte) 0xc0, (byte) 0x80},             // an overlong NUL ("modified UTF-8")
                {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, // an encoded surrogate (CESU-8)
                {(byte) 0xff},
        };
        for (byte[] bytes : malformed) {
            assertThat(error(content(b -> b.str("t").bytes(bytes).len(-1).len(0))))
                    .as(HexFormat.of().formatHex(bytes))
                    .isEqualTo("the key is not valid UTF-8 (" + bytes.length + " bytes at offset 26)");
        }
        assertThat(error(content(b -> b.bytes(new byte[]{'t', (byte) 0xc3}))))
                .isEqualTo("the topic is not valid UTF-8 (2 bytes at offset 21)");
        assertThat(error(content(b -> b.str("t").str("k").len(-1).len(1).bytes(new byte[]{(byte) 0xe2}).len(-1))))
                .startsWith("the header 0 name is not valid UTF-8");
    }

    @Test
    void aDecodedMessageIsCheckedAsATableRowIs() {
        assertThat(error(WalCodec.encode(OutboxMessage.of("t", "ab🔑", "v"), ID), 2))
                .isEqualTo("key is 3 characters, longer than the store's maxKeyLength 2: 'ab🔑'");
        assertThat(WalCodec.decode(WalCodec.encode(OutboxMessage.of("t", "a🔑", "v"), ID), 2).isValid())
                .as("code points are counted, as in the table").isTrue();
        assertThat(error(content(b -> b.str(" ").str("k").len(-1).len(0)))).isEqualTo("topic must not be blank: ' '");
        assertThat(error(content(b -> b.str("a b").str("k").len(-1).len(0))))
                .isEqualTo("topic 'a b' contains whitespace or a control character at index 1");
        assertThat(error(content(b -> b.str("t".repeat(250)).str("k").len(-1).len(0))))
                .startsWith("topic is 250 characters, longer than 249");
        assertThat(error(content(b -> b.str("t").str("a\u0000b").len(-1).len(0))))
                .isEqualTo("key 'a\\u0000b' contains the character U+0000 at index 1, which Postgres text cannot store");
        assertThat(error(content(b -> b.str("t").str("k").len(-1).len(1).str("\u0000").len(-1))))
                .startsWith("header 0 name '\\u0000' contains the character U+0000");
    }

    @Test
    void arbitraryBytesNeverThrow() {
        Random random = new Random(21);
        byte[] valid = WalCodec.encode(WalTestMessages.all().get("unicode"), ID);
        for (int i = 0; i < 20_000; i++) {
            byte[] content;
            if (i % 2 == 0) {
                content = new byte[random.nextInt(64)];
                random.nextBytes(content);
                if (content.length > 0 && random.nextBoolean()) {
                    content[0] = WalCodec.VERSION;
                }
            } else {
                content = valid.clone(); // one byte flipped
                content[random.nextInt(content.length)] ^= (byte) (1 << random.nextInt(8));
            }
            WalCodec.Decoded decoded = WalCodec.decode(content, 100);
            assertThat(decoded.message() == null).isEqualTo(decoded.error() != null);
        }
    }

    private static String error(byte[] content) {
        return error(content, NO_LIMIT);
    }

    private static String error(byte[] content, int maxKeyLength) {
        WalCodec.Decoded decoded = WalCodec.decode(content, maxKeyLength);
        assertThat(decoded.message()).as("a message from invalid content").isNull();
        return decoded.error();
    }

    /** Version 1 and {@link #ID}, then what {@code body} writes. */
    private static byte[] content(Body body) {
        try {
            Content out = new Content();
            out.data.writeByte(1);
            out.data.writeLong(ID.getMostSignificantBits());
            out.data.writeLong(ID.getLeastSignificantBits());
            body.write(out);
            return out.bytes.toByteArray();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @FunctionalInterface
    private interface Body {
        void write(Content content) throws IOException;
    }

    /** Writes fields by hand, valid or not. */
    private static final class Content {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final DataOutputStream data = new DataOutputStream(bytes);

        Content len(int length) throws IOException {
            data.writeInt(length);
            return this;
        }

        Content str(String value) throws IOException {
            return bytes(value.getBytes(StandardCharsets.UTF_8));
        }

        Content bytes(byte[] value) throws IOException {
            data.writeInt(value.length);
            data.write(value);
            return this;
        }
    }
}
