package dev.outbox;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * One message header: a non-empty name and a value of bytes, which may be {@code null} (Kafka allows headers
 * without a value). Immutable and thread-safe; the value is copied in and out.
 */
public final class Header {
    private final String name;
    private final byte[] value;

    private Header(String name, byte[] value) {
        if (name == null) {
            throw new IllegalArgumentException("header name must not be null");
        }
        if (name.isEmpty()) {
            throw new IllegalArgumentException("header name must not be empty");
        }
        this.name = name;
        this.value = value == null ? null : value.clone();
    }

    /**
     * A header with a binary value; {@code value} may be null.
     *
     * @param name  the header's name; not null, not empty
     * @param value the value, copied; or null for a header without a value
     * @return the header
     * @throws IllegalArgumentException if {@code name} is null or empty
     */
    public static Header of(String name, byte[] value) {
        return new Header(name, value);
    }

    /**
     * A header whose value is {@code value} in UTF-8; {@code value} may be null.
     *
     * @param name  the header's name; not null, not empty
     * @param value the value, encoded as UTF-8; or null for a header without a value
     * @return the header
     * @throws IllegalArgumentException if {@code name} is null or empty
     */
    public static Header of(String name, String value) {
        return new Header(name, value == null ? null : value.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The header's name.
     *
     * @return the name; never null or empty
     */
    public String name() {
        return name;
    }

    /**
     * A copy of the value, or {@code null}.
     *
     * @return a new copy of the value on each call, or null for a header without a value
     */
    public byte[] value() {
        return value == null ? null : value.clone();
    }

    /**
     * The value's length in bytes, 0 for a null value, without copying it.
     *
     * @return the length in bytes, 0 or more
     */
    public int valueSize() {
        return value == null ? 0 : value.length;
    }

    /**
     * The value decoded as UTF-8, or {@code null}.
     *
     * @return the decoded value (malformed bytes become U+FFFD), or null for a header without a value
     */

    public String valueAsString() {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Header h && name.equals(h.name) && Arrays.equals(value, h.value);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, Arrays.hashCode(value));
    }

    @Override
    public String toString() {
        return name + "=" + (value == null ? "null" : value.length + " bytes");
    }
}
