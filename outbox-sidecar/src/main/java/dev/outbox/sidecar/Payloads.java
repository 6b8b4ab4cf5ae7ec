package dev.outbox.sidecar;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Optional;

/**
 * Shows payload and header bytes as text (when they are valid UTF-8) or hex; a payload longer than
 * {@value #PREVIEW_BYTES} bytes only in part (the whole value is downloaded). Stateless.
 */
final class Payloads {
    /** The most bytes of a payload the console and the API show; the rest is downloaded. */
    static final int PREVIEW_BYTES = 4096;

    private Payloads() {
    }

    /**
     * The first bytes of a payload, shown.
     *
     * @param shown      the shown bytes as text or hex
     * @param hex        whether {@code shown} is hex (asked for, or the payload is not valid UTF-8)
     * @param shownBytes how many bytes {@code shown} holds
     * @param size       the payload's size in bytes
     */
    record Preview(String shown, boolean hex, int shownBytes, int size) {
        /** How many bytes are not shown. */
        int hiddenBytes() {
            return size - shownBytes;
        }
    }

    /**
     * At most {@value #PREVIEW_BYTES} bytes of {@code value} (not null) as text if asked for and the whole value is
     * valid UTF-8 (cut before a character that would not fit whole), else as hex.
     */
    static Preview preview(byte[] value, boolean hex) {
        return preview(value, hex, PREVIEW_BYTES);
    }

    /** As {@link #preview(byte[], boolean)}, at most {@code maxBytes} bytes (a list's cell shows fewer). */
    static Preview preview(byte[] value, boolean hex, int maxBytes) {
        boolean asHex = hex || text(value).isEmpty();
        int cut = Math.min(value.length, maxBytes);
        if (!asHex) {
            while (cut > 0 && cut < value.length && (value[cut] & 0xC0) == 0x80) {
                cut--; // value[cut] continues the character before it: cut before that character
            }
        }
        byte[] head = cut == value.length ? value : java.util.Arrays.copyOf(value, cut);
        return new Preview(asHex ? hex(head) : new String(head, StandardCharsets.UTF_8), asHex, cut, value.length);
    }

    /** The bytes as UTF-8 text, or empty if they are not valid UTF-8 (or null). */
    static Optional<String> text(byte[] bytes) {
        if (bytes == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString());
        } catch (CharacterCodingException e) {
            return Optional.empty();
        }
    }

    /** The bytes in hex, two digits a byte, separated by spaces; "" for null. */
    static String hex(byte[] bytes) {
        return bytes == null ? "" : HexFormat.ofDelimiter(" ").formatHex(bytes);
    }

    /** Text if asked for and possible, else hex. */
    static String render(byte[] bytes, boolean hex) {
        if (bytes == null) {
            return null;
        }
        return hex ? hex(bytes) : text(bytes).orElseGet(() -> hex(bytes));
    }
}
