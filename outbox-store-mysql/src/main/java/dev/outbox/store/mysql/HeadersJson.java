package dev.outbox.store.mysql;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import dev.outbox.Header;
import dev.outbox.spi.RowChecks;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * The {@code headers} column: a JSON array of objects {@code {"name": <string>, "value": <base64 string or
 * null>}}, in header order, read and written with Jackson's streaming API. SQL NULL and {@code []} both mean "no
 * headers"; a missing {@code "value"} member means a null value. Base64 is the standard alphabet with padding
 * (RFC 4648 §4); whitespace inside it is ignored, because MySQL's {@code TO_BASE64()} breaks its output into lines
 * of 76 characters.
 *
 * <p>Any language can write the column with plain SQL, for example
 * {@code JSON_ARRAY(JSON_OBJECT('name', 'trace-id', 'value', TO_BASE64('abc')))}.
 *
 * <p>Reading is strict, because rows may have been written by hand: anything else (invalid JSON, another JSON
 * type, an unknown or repeated member, an empty name, invalid base64) is an {@link IllegalArgumentException} naming
 * what is wrong, and the row is rejected (parked) rather than delivered with headers silently changed. Stateless
 * and thread-safe.
 */
final class HeadersJson {
    private static final JsonFactory JSON = JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();
    private static final Base64.Decoder DECODER = Base64.getDecoder();

    private HeadersJson() {
    }

    /** The column value for {@code headers}: null for none. */
    static String write(List<Header> headers) {
        if (headers.isEmpty()) {
            return null;
        }
        StringWriter out = new StringWriter(32 * headers.size());
        try (JsonGenerator json = JSON.createGenerator(out)) {
            json.writeStartArray();
            for (Header h : headers) {
                json.writeStartObject();
                json.writeStringField("name", h.name());
                json.writeFieldName("value");
                if (h.value() == null) {
                    json.writeNull();
                } else {
                    json.writeBinary(h.value()); // standard base64 with padding, on one line
                }
                json.writeEndObject();
            }
            json.writeEndArray();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot happen: writing JSON to a string", e);
        }
        return out.toString();
    }

    /** Parses the column value; null means no headers. */
    static List<Header> read(String text) {
        if (text == null) {
            return List.of();
        }
        try (JsonParser json = JSON.createParser(text)) {
            if (json.nextToken() != JsonToken.START_ARRAY) {
                throw new IllegalArgumentException("headers is not a JSON array: " + RowChecks.abbreviate(text));
            }
            List<Header> headers = new ArrayList<>();
            for (JsonToken token = json.nextToken(); token != JsonToken.END_ARRAY; token = json.nextToken()) {
                headers.add(header(headers.size(), json, token));
            }
            if (json.nextToken() != null) {
                throw new IllegalArgumentException("headers has text after the JSON array: "
                        + RowChecks.abbreviate(text));
            }
            return headers;
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("headers is not valid JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot happen: reading JSON from a string", e);
        }
    }

    private static Header header(int index, JsonParser json, JsonToken start) throws IOException {
        if (start != JsonToken.START_OBJECT) {
            throw new IllegalArgumentException("headers[" + index + "] is not a JSON object {\"name\": ..., "
                    + "\"value\": ...}: " + describe(json, start));
        }
        String name = null;
        String base64 = null;
        for (String member = json.nextFieldName(); member != null; member = json.nextFieldName()) {
            JsonToken token = json.nextToken();
            switch (member) {
                case "name" -> {
                    if (token != JsonToken.VALUE_STRING && token != JsonToken.VALUE_NULL) {
                        throw new IllegalArgumentException("headers[" + index + "].name is not a string: "
                                + describe(json, token));
                    }
                    name = json.getValueAsString();
                }
                case "value" -> {
                    if (token != JsonToken.VALUE_STRING && token != JsonToken.VALUE_NULL) {
                        throw new IllegalArgumentException("headers[" + index + "].value is not a base64 string or"
                                + " null: " + describe(json, token));
                    }
                    base64 = json.getValueAsString();
                }
                default -> throw new IllegalArgumentException("headers[" + index + "] has an unknown member '"
                        + member + "' (expected only \"name\" and \"value\")");
            }
        }
        if (name == null) {
            throw new IllegalArgumentException("headers[" + index + "] has no \"name\"");
        }
        if (name.isEmpty()) {
            throw new IllegalArgumentException("headers[" + index + "].name is empty");
        }
        if (base64 == null) {
            return Header.of(name, (byte[]) null);
        }
        try {
            return Header.of(name, DECODER.decode(base64.replaceAll("[ \\t\\r\\n]", "")));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("headers[" + index + "].value (header '" + name
                    + "') is not valid base64: " + RowChecks.abbreviate(base64) + " (" + e.getMessage() + ")", e);
        }
    }

    /** The JSON value at {@code token}, for a message; skips it if it is an object or array. */
    private static String describe(JsonParser json, JsonToken token) throws IOException {
        return switch (token) {
            case START_OBJECT -> {
                json.skipChildren();
                yield "an object";
            }
            case START_ARRAY -> {
                json.skipChildren();
                yield "an array";
            }
            case VALUE_STRING -> "string " + RowChecks.abbreviate(json.getText());
            default -> json.getText();
        };
    }
}
