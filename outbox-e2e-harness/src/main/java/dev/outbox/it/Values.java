package dev.outbox.it;

import dev.outbox.OutboxRecord;

import java.nio.charset.StandardCharsets;

/**
 * The values the writers publish: {@code <seq>:<token>}, where {@code seq} counts the committed messages of the
 * key from 0 and {@code token} names the transaction that wrote it (so a message of a rolled-back transaction
 * can never pass for a committed one), padded to about 100 bytes like a small event.
 */
final class Values {
    private static final String PAD = ":" + "x".repeat(80);

    private Values() {
    }

    static byte[] encode(int seq, String token) {
        return (seq + ":" + token + PAD).getBytes(StandardCharsets.UTF_8);
    }

    /** The sequence number of a writer's value, or -1 if {@code value} is not one (a poison record). */
    static int seqOf(byte[] value) {
        if (value == null) {
            return -1;
        }
        int colon = -1;
        for (int i = 0; i < value.length && i < 12; i++) {
            if (value[i] == ':') {
                colon = i;
                break;
            }
        }
        if (colon <= 0) {
            return -1;
        }
        try {
            return Integer.parseInt(new String(value, 0, colon, StandardCharsets.US_ASCII));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static int seqOf(OutboxRecord record) {
        return seqOf(record.message().value());
    }

    /** The token of a writer's value, or null if {@code value} is not one. */
    static String tokenOf(byte[] value) {
        if (seqOf(value) < 0) {
            return null;
        }
        String s = new String(value, StandardCharsets.UTF_8);
        int first = s.indexOf(':');
        int second = s.indexOf(':', first + 1);
        return second < 0 ? null : s.substring(first + 1, second);
    }
}
