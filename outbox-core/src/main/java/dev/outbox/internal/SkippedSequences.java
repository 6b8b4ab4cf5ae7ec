package dev.outbox.internal;

import dev.outbox.Header;
import dev.outbox.KeySequence;
import dev.outbox.OutboxRecord;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The per-key sequence numbers ({@link KeySequence#SEQUENCE}) of records this leader parked while their keys moved
 * on ({@code AfterPark.MOVE_ON}), until the next record of each key that it sends carries them to the consumer as
 * {@link KeySequence#SKIPPED}: so that a consumer checking the sequence reports the hole as the deliberate gap it is.
 *
 * <p>A note stays until the record that carries it is acknowledged: a carrier that fails is sent again with it, and
 * one that is parked adds its own number to the note for the next carrier. A key has one record in flight at a time,
 * so a note has one carrier at a time. Records without the sequence header leave no note, and a record is copied only
 * when its key has a note: the common path costs one volatile read. Notes live in memory: a new leadership starts
 * without any (its predecessor's parks then show as plain gaps).
 *
 * <p>Thread-safe: the settle thread notes parks and acknowledgements under the state's lock, the harvest thread
 * reads at send time outside it.
 */
final class SkippedSequences {
    private record Note(List<Long> skipped, long carrier) {
    }

    private final Map<String, Note> notes = new HashMap<>();
    /** Whether {@link #notes} may hold anything; written under this object's lock. */
    private volatile boolean any;

    /** {@code parked} was parked and its key moves on: its sequence number, if it has one, waits for a carrier. */
    synchronized void parked(OutboxRecord parked) {
        byte[] sequence = KeySequence.last(parked.message().headers(), KeySequence.SEQUENCE);
        if (sequence == null) {
            return;
        }
        long number;
        try {
            number = KeySequence.decode(KeySequence.SEQUENCE, sequence);
        } catch (IllegalArgumentException e) {
            return; // not a number: the consumer cannot place it either
        }
        Note note = notes.get(parked.key());
        List<Long> skipped = new ArrayList<>(note == null ? List.of() : note.skipped());
        skipped.add(number);
        notes.put(parked.key(), new Note(List.copyOf(skipped), 0));
        any = true;
    }

    /**
     * The record as it is to be sent: with {@link KeySequence#SKIPPED} appended if its key has a note.
     *
     * @param record the record about to be sent
     * @return {@code record} itself, or a copy carrying the note
     */
    OutboxRecord carry(OutboxRecord record) {
        if (!any) {
            return record;
        }
        Note note;
        synchronized (this) {
            note = notes.get(record.key());
            if (note == null) {
                return record;
            }
            notes.put(record.key(), new Note(note.skipped(), record.id()));
        }
        return new OutboxRecord(record.id(), record.createdAt(),
                record.message().withHeader(Header.of(KeySequence.SKIPPED, KeySequence.encodeList(note.skipped()))),
                record.attempts(), record.leaderId(), record.messageId(), record.nextAttemptAt());
    }

    /** {@code delivered} was acknowledged: the note it carried, if any, has reached the broker. */
    void acknowledged(OutboxRecord delivered) {
        if (!any) {
            return;
        }
        synchronized (this) {
            Note note = notes.get(delivered.key());
            if (note != null && note.carrier() == delivered.id()) {
                notes.remove(delivered.key());
                any = !notes.isEmpty();
            }
        }
    }

    /** A leadership begins or ends: the notes are forgotten. */
    synchronized void clear() {
        notes.clear();
        any = false;
    }

    /** How many keys have a note. */
    synchronized int size() {
        return notes.size();
    }
}
