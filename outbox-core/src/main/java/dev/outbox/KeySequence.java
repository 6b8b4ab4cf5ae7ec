package dev.outbox;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The per-key sequence: headers that let a consumer detect, for each topic and key, a record that is missing or
 * out of order.
 *
 * <p><b>{@value #SEQUENCE}</b> — written by the <em>writer</em>, in the row's headers, when the store's key
 * sequence is on: the record's position among the records of its topic and key in one outbox, 1, 2, 3, … with no
 * hole. A writer takes the next number from a per-(topic, key) counter row <em>before</em> the row takes its id, and
 * holds that row's lock until its transaction ends, so that writers of one key follow each other: the sequence
 * order of a key is its id order and its commit order, which every harvest keeps. Because the writer assigns it,
 * a row removed before it was sent (deleted by hand, lost) shows as a gap at the consumer.
 *
 * <p><b>{@value #REPLAYED}</b> — added by a store's replay to a record an operator put back from the parked area;
 * its value is the id the row had when it was parked. Such a record's sequence number is older than what the
 * consumer may have seen already: a deliberate reorder, not a broken one.
 *
 * <p><b>{@value #SKIPPED}</b> — added by the dispatcher, with the default {@code AfterPark.MOVE_ON}, to the first
 * record of a key it sends after it parked records of that key: the sequence numbers of the parked records, so
 * that the consumer reports the hole they leave as the deliberate gap it is. The dispatcher keeps this note in
 * memory: a new leader does not know of its predecessor's parks, and the consumer then reports a plain gap.
 *
 * <p>Values are decimal numbers in ASCII, {@value #SKIPPED} a comma-separated list of them, so that writers and
 * consumers in any language can read and write them.
 */
public final class KeySequence {
    /** The record's position among its topic and key's records, from 1; written by the writer. */
    public static final String SEQUENCE = "outbox-key-seq";
    /** On a record replayed from the parked area: the id the row had when it was parked. */
    public static final String REPLAYED = "outbox-replayed";
    /** On the first record of a key sent after some of its records were parked: their sequence numbers. */
    public static final String SKIPPED = "outbox-key-skipped";

    private KeySequence() {
    }

    /**
     * A number as the headers carry it.
     *
     * @param value the number
     * @return its decimal digits in ASCII
     */
    public static byte[] encode(long value) {
        return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Numbers as {@value #SKIPPED} carries them.
     *
     * @param values the numbers, in order; not null
     * @return their decimal digits in ASCII, separated by commas
     */
    public static byte[] encodeList(List<Long> values) {
        StringBuilder text = new StringBuilder();
        for (long v : Objects.requireNonNull(values, "values must not be null")) {
            if (text.length() > 0) {
                text.append(',');
            }
            text.append(v);
        }
        return text.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Reads a number a header carries.
     *
     * @param name  the header's name, for the error
     * @param value the header's value
     * @return the number
     * @throws IllegalArgumentException naming the header and its value if it is not a decimal number
     */
    public static long decode(String name, byte[] value) {
        String text = value == null ? "null" : new String(value, StandardCharsets.US_ASCII);
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("header " + name + " must be a decimal number, not '" + text + "'", e);
        }
    }

    /**
     * Reads the list {@value #SKIPPED} carries.
     *
     * @param value the header's value
     * @return the numbers, in order
     * @throws IllegalArgumentException naming the value if an element is not a decimal number
     */
    public static List<Long> decodeList(byte[] value) {
        String text = value == null ? "" : new String(value, StandardCharsets.US_ASCII);
        List<Long> out = new ArrayList<>();
        if (text.isEmpty()) {
            return out;
        }
        for (String part : text.split(",", -1)) {
            try {
                out.add(Long.parseLong(part));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("header " + SKIPPED + " must list decimal numbers, not '" + text
                        + "'", e);
            }
        }
        return out;
    }

    /**
     * The value of the last header named {@code name} in {@code headers}.
     *
     * @param headers the record's headers; not null
     * @param name    the header's name
     * @return its value, or null if there is no such header (or its value is null)
     */
    public static byte[] last(List<Header> headers, String name) {
        for (int i = headers.size() - 1; i >= 0; i--) {
            if (headers.get(i).name().equals(name)) {
                return headers.get(i).value();
            }
        }
        return null;
    }
}
