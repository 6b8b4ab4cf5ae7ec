package dev.outbox.store.mysql;

import dev.outbox.Header;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * The {@code headers} column: a JSON array of objects {@code {"name": <string>, "value": <base64 string or
 * null>}}, in header order. SQL NULL and {@code []} both mean "no headers"; a missing {@code "value"} member
 * means a null value. Base64 is the standard alphabet with padding (RFC 4648 §4); whitespace inside it is
 * ignored, because MySQL's {@code TO_BASE64()} breaks its output into lines of 76 characters.
 *
 * <p>Any language can write the column with plain SQL, for example
 * {@code JSON_ARRAY(JSON_OBJECT('name', 'trace-id', 'value', TO_BASE64('abc')))}.
 *
 * <p>Reading is strict, because rows may have been written by hand: anything else (another JSON type, an
 * unknown member, an empty name, invalid base64) is an {@link IllegalArgumentException} naming what is wrong,
 * and the row is rejected (parked) rather than delivered with headers silently changed. Stateless and
 * thread-safe.
 */
final class HeadersJson {
    private static final Base64.Encoder ENCODER = Base64.getEncoder();
    private static final Base64.Decoder DECODER = Base64.getDecoder();

    private HeadersJson() {
    }

    /** The column value for {@code headers}: null for none. */
    static String write(List<Header> headers) {
        if (headers.isEmpty()) {
            return null;
        }
        StringBuilder out = new StringBuilder(32 * headers.size());
        out.append('[');
        for (int i = 0; i < headers.size(); i++) {
            Header h = headers.get(i);
            if (i > 0) {
                out.append(',');
            }
            out.append("{\"name\":");
            quote(out, h.name());
            out.append(",\"value\":");
            byte[] value = h.value();
            if (value == null) {
                out.append("null");
            } else {
                out.append('"').append(ENCODER.encodeToString(value)).append('"');
            }
            out.append('}');
        }
        return out.append(']').toString();
    }

    /** Parses the column value; null means no headers. */
    static List<Header> read(String json) {
        if (json == null) {
            return List.of();
        }
        Parser parser = new Parser(json);
        Object parsed = parser.parseDocument();
        if (!(parsed instanceof List<?> elements)) {
            throw new IllegalArgumentException("headers is not a JSON array: " + abbreviate(json));
        }
        List<Header> headers = new ArrayList<>(elements.size());
        for (int i = 0; i < elements.size(); i++) {
            headers.add(header(i, elements.get(i)));
        }
        return headers;
    }

    private static Header header(int index, Object element) {
        if (!(element instanceof JsonObject object)) {
            throw new IllegalArgumentException("headers[" + index + "] is not a JSON object {\"name\": ..., "
                    + "\"value\": ...}: " + describe(element));
        }
        Object name = null;
        Object value = null;
        boolean hasName = false;
        for (int m = 0; m < object.names.size(); m++) {
            String member = object.names.get(m);
            switch (member) {
                case "name" -> {
                    name = object.values.get(m);
                    hasName = true;
                }
                case "value" -> value = object.values.get(m);
                default -> throw new IllegalArgumentException("headers[" + index + "] has an unknown member '"
                        + member + "' (expected only \"name\" and \"value\")");
            }
        }
        if (!hasName || name == null) {
            throw new IllegalArgumentException("headers[" + index + "] has no \"name\"");
        }
        if (!(name instanceof String nameText)) {
            throw new IllegalArgumentException("headers[" + index + "].name is not a string: " + describe(name));
        }
        if (nameText.isEmpty()) {
            throw new IllegalArgumentException("headers[" + index + "].name is empty");
        }
        if (value == null) {
            return Header.of(nameText, (byte[]) null);
        }
        if (!(value instanceof String base64)) {
            throw new IllegalArgumentException("headers[" + index + "].value (header '" + nameText
                    + "') is not a base64 string or null: " + describe(value));
        }
        try {
            return Header.of(nameText, DECODER.decode(stripWhitespace(base64)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("headers[" + index + "].value (header '" + nameText
                    + "') is not valid base64: " + abbreviate(base64) + " (" + e.getMessage() + ")", e);
        }
    }

    private static String stripWhitespace(String s) {
        StringBuilder out = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
            if (space && out == null) {
                out = new StringBuilder(s.length()).append(s, 0, i);
            } else if (!space && out != null) {
                out.append(c);
            }
        }
        return out == null ? s : out.toString();
    }

    private static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    private static String describe(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof String s) {
            return "string " + abbreviate(s);
        }
        if (value instanceof JsonObject) {
            return "an object";
        }
        if (value instanceof List<?>) {
            return "an array";
        }
        return value.toString();
    }

    static String abbreviate(String value) {
        return value.length() <= 60 ? "'" + value + "'" : "'" + value.substring(0, 60) + "…'";
    }

    /** A parsed JSON object, its members in document order. */
    private static final class JsonObject {
        final List<String> names = new ArrayList<>();
        final List<Object> values = new ArrayList<>();
    }

    /** Marks a JSON number, true or false; only their presence matters here (to report them). */
    private record Scalar(String text) {
        @Override
        public String toString() {
            return text;
        }
    }

    /**
     * A small strict JSON parser (RFC 8259): objects become {@link JsonObject}, arrays {@link List}, strings
     * {@link String}, null {@code null}, numbers and booleans {@link Scalar}. Not thread-safe; one per document.
     */
    private static final class Parser {
        private static final int MAX_DEPTH = 64;
        private final String text;
        private int pos;
        private int depth;

        Parser(String text) {
            this.text = text;
        }

        Object parseDocument() {
            skipWhitespace();
            Object value = parseValue();
            skipWhitespace();
            if (pos != text.length()) {
                throw error("unexpected text after the JSON value");
            }
            return value;
        }

        private Object parseValue() {
            if (pos >= text.length()) {
                throw error("unexpected end");
            }
            char c = text.charAt(pos);
            switch (c) {
                case '{':
                    return parseObject();
                case '[':
                    return parseArray();
                case '"':
                    return parseString();
                case 'n':
                    expectWord("null");
                    return null;
                case 't':
                    expectWord("true");
                    return new Scalar("true");
                case 'f':
                    expectWord("false");
                    return new Scalar("false");
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return parseNumber();
                    }
                    throw error("unexpected character '" + c + "'");
            }
        }

        private JsonObject parseObject() {
            enter();
            pos++; // {
            JsonObject object = new JsonObject();
            skipWhitespace();
            if (peek() == '}') {
                pos++;
                depth--;
                return object;
            }
            while (true) {
                skipWhitespace();
                if (peek() != '"') {
                    throw error("expected a member name");
                }
                String name = parseString();
                skipWhitespace();
                expect(':');
                skipWhitespace();
                Object value = parseValue();
                if (object.names.contains(name)) {
                    throw error("duplicate member '" + name + "'");
                }
                object.names.add(name);
                object.values.add(value);
                skipWhitespace();
                char c = peek();
                pos++;
                if (c == '}') {
                    depth--;
                    return object;
                }
                if (c != ',') {
                    pos--;
                    throw error("expected ',' or '}'");
                }
            }
        }

        private List<Object> parseArray() {
            enter();
            pos++; // [
            List<Object> list = new ArrayList<>();
            skipWhitespace();
            if (peek() == ']') {
                pos++;
                depth--;
                return list;
            }
            while (true) {
                skipWhitespace();
                list.add(parseValue());
                skipWhitespace();
                char c = peek();
                pos++;
                if (c == ']') {
                    depth--;
                    return list;
                }
                if (c != ',') {
                    pos--;
                    throw error("expected ',' or ']'");
                }
            }
        }

        private String parseString() {
            pos++; // opening quote
            StringBuilder out = new StringBuilder();
            while (true) {
                if (pos >= text.length()) {
                    throw error("unterminated string");
                }
                char c = text.charAt(pos++);
                if (c == '"') {
                    return out.toString();
                }
                if (c == '\\') {
                    if (pos >= text.length()) {
                        throw error("unterminated escape");
                    }
                    char e = text.charAt(pos++);
                    switch (e) {
                        case '"' -> out.append('"');
                        case '\\' -> out.append('\\');
                        case '/' -> out.append('/');
                        case 'b' -> out.append('\b');
                        case 'f' -> out.append('\f');
                        case 'n' -> out.append('\n');
                        case 'r' -> out.append('\r');
                        case 't' -> out.append('\t');
                        case 'u' -> {
                            if (pos + 4 > text.length()) {
                                throw error("truncated \\u escape");
                            }
                            try {
                                out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                            } catch (NumberFormatException ex) {
                                throw error("invalid \\u escape");
                            }
                            pos += 4;
                        }
                        default -> throw error("invalid escape '\\" + e + "'");
                    }
                } else if (c < 0x20) {
                    throw error("unescaped control character in a string");
                } else {
                    out.append(c);
                }
            }
        }

        private Scalar parseNumber() {
            int start = pos;
            while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0) {
                pos++;
            }
            return new Scalar(text.substring(start, pos));
        }

        private void expectWord(String word) {
            if (!text.startsWith(word, pos)) {
                throw error("unexpected word");
            }
            pos += word.length();
        }

        private void expect(char c) {
            if (peek() != c) {
                throw error("expected '" + c + "'");
            }
            pos++;
        }

        private char peek() {
            if (pos >= text.length()) {
                throw error("unexpected end");
            }
            return text.charAt(pos);
        }

        private void enter() {
            if (++depth > MAX_DEPTH) {
                throw error("nested deeper than " + MAX_DEPTH);
            }
        }

        private void skipWhitespace() {
            while (pos < text.length()) {
                char c = text.charAt(pos);
                if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                    return;
                }
                pos++;
            }
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("headers is not valid JSON (" + what + " at offset " + pos + "): "
                    + abbreviate(text));
        }
    }
}
