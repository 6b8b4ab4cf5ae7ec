package dev.outbox;

import java.time.Instant;
import java.util.List;

/**
 * One parked row in full, as stored: what an operator inspects before replaying or discarding it. The row may not
 * be a valid message (that may be why it was parked), so nothing here is validated beyond what could be read.
 * Immutable; the value is copied in and out.
 *
 * @param record         the row's summary (id, topic, key, attempts, reason, parked time)
 * @param createTime     when the row was written to the outbox, or null
 * @param value          its payload, or null for a tombstone
 * @param headers        its headers, in order; empty when there are none or they could not be read
 * @param headersProblem why the headers could not be read, or null when they could
 */
public record ParkedMessage(ParkedRecord record, Instant createTime, byte[] value, List<Header> headers,
                            String headersProblem) {

    /**
     * Copies {@code value} and {@code headers}.
     *
     * @param record         the row's summary
     * @param createTime     when the row was written, or null
     * @param value          its payload, copied; or null
     * @param headers        its headers, copied; not null, no null element
     * @param headersProblem why the headers could not be read, or null
     * @throws NullPointerException if {@code headers} is null or holds null
     */
    public ParkedMessage {
        value = value == null ? null : value.clone();
        headers = List.copyOf(headers);
    }

    /**
     * A copy of the payload, or null for a tombstone.
     *
     * @return a new copy on each call, or null
     */

    @Override
    public byte[] value() {
        return value == null ? null : value.clone();
    }
}
