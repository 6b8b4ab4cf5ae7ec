package dev.outbox.internal;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;

/**
 * The bound in bytes of the {@link KeySchedule}: the bytes of the records in flight and queued, the size estimate
 * that the last read taught, and from them how many rows a read may ask for. Records are counted when read, not
 * when sent, since that is when they take up memory. The store cannot know the sizes before it reads, so a read can
 * overshoot the bound by what its rows exceed the estimate: never when sizes are steady, by at most that one read's
 * rows when they grow suddenly; the next read waits until the bytes fall below the bound.
 *
 * <p>Not thread-safe: owned by the {@link KeySchedule}, guarded like it.
 */
final class ByteBudget {
    private final long maxBytes;
    /** Bytes of the records in flight and queued ({@link #size}). */
    private long bytes;
    /** Mean record size of the last read that returned rows; 0 until one has. */
    private long sizeEstimate;
    /** Rows and bytes offered since {@link #readStarted()}. */
    private int readRows;
    private long readBytes;

    ByteBudget(long maxBytes) {
        this.maxBytes = maxBytes;
    }

    /**
     * A record's size as the schedule counts it: the bytes of its value and of its headers' values, plus one byte per
     * character of its key and of its headers' names. Object overheads are not counted: they matter only for tiny
     * records, which the bound in records covers.
     */
    static long size(OutboxRecord r) {
        OutboxMessage m = r.message();
        long n = m.valueSize() + (long) m.key().length();
        for (Header h : m.headers()) {
            n += h.name().length() + (long) h.valueSize();
        }
        return n;
    }

    void add(OutboxRecord r) {
        bytes += size(r);
    }

    void remove(OutboxRecord r) {
        bytes -= size(r);
    }

    void readStarted() {
        readRows = 0;
        readBytes = 0;
    }

    /** A read offered a row of {@code size} bytes (queued or not). */
    void offered(long size) {
        readRows++;
        readBytes += size;
    }

    /** The read ended: if it offered rows, their mean size becomes the estimate of the next read. */
    void readEnded() {
        if (readRows > 0) {
            sizeEstimate = Math.max(1, (readBytes + readRows - 1) / readRows);
        }
        readRows = 0;
        readBytes = 0;
    }

    /**
     * How many of {@code records} more records fit in the bytes left at the size estimate (one while the size is
     * unknown): 0 once the bytes reach the bound, but at least 1 when {@code empty} (nothing in flight or queued), so
     * that a record larger than the bound goes alone.
     */
    int room(int records, boolean empty) {
        if (maxBytes == Long.MAX_VALUE || records <= 0) {
            return records;
        }
        long fit = sizeEstimate == 0 ? 1 : (maxBytes - bytes) / sizeEstimate;
        if (fit <= 0) {
            return empty ? 1 : 0;
        }
        return (int) Math.min(records, fit);
    }

    /**
     * The least room worth a read: {@code batch}, or less when the bound holds fewer records than two batches at the
     * size estimate — then half of what it holds (at least one).
     */
    int readThreshold(int batch) {
        if (maxBytes == Long.MAX_VALUE) {
            return batch;
        }
        long holds = sizeEstimate == 0 ? 1 : maxBytes / sizeEstimate;
        return (int) Math.max(1, Math.min(batch, holds / 2));
    }

    long bytes() {
        return bytes;
    }

    long sizeEstimate() {
        return sizeEstimate;
    }
}
