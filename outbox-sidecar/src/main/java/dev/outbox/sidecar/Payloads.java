package dev.outbox.sidecar;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Optional;

/** Shows payload and header bytes as text (when they are valid UTF-8) or hex. Stateless. */
final class Payloads {
    private Payloads() {
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
