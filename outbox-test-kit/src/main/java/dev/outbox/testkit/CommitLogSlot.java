package dev.outbox.testkit;

import dev.outbox.spi.CommitStream;
import dev.outbox.spi.StoreException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The logical replication slot of an {@link InMemoryCommitLog}: its confirmed position, the one stream that holds it,
 * and the streams themselves. A stream's {@link CommitStream#confirm confirm} is kept by the stream and reaches the
 * slot with its next status update (its next poll, its orderly close); a stream terminated or lost first loses it.
 *
 * <p>Thread-safe: every call is atomic under the log's lock.
 */
final class CommitLogSlot {
    private final Object lock;
    private final InMemoryCommitLog log;
    /** The slot's confirmed position. Guarded by {@link #lock}. */
    private long confirmed;
    /** The stream holding the slot, or null. Guarded by {@link #lock}. */
    private LogStream holder;
    /** The streams opened so far, the number of the last. Guarded by {@link #lock}. */
    private long streams;

    CommitLogSlot(Object lock, InMemoryCommitLog log) {
        this.lock = lock;
        this.log = log;
    }

    /** The slot's confirmed position. Caller holds {@link #lock}. */
    long confirmed() {
        return confirmed;
    }

    /** See {@link InMemoryCommitLog#open}. */
    CommitStream open(String owner, boolean takeOver) {
        synchronized (lock) {
            if (holder != null) {
                if (!takeOver) {
                    throw new StoreException("replication slot is active for " + holder.owner + " (stream "
                            + holder.number + ")", null, true);
                }
                holder.terminated = true; // pg_terminate_backend: its unsent confirmation dies with it
                holder = null;
            }
            int from = 0;
            while (from < log.size() && log.message(from).endPosition() <= confirmed) {
                from++;
            }
            holder = new LogStream(owner, ++streams, from);
            return holder;
        }
    }

    /** The owner of the stream that holds the slot, or null. */
    String holder() {
        synchronized (lock) {
            return holder == null ? null : holder.owner;
        }
    }

    /** See {@link InMemoryCommitLog#terminateHolder}. */
    void terminateHolder(boolean statusFirst) {
        synchronized (lock) {
            if (holder != null) {
                if (statusFirst) {
                    holder.sendStatus();
                }
                holder.terminated = true;
                holder = null;
            }
        }
    }

    /** Appends the slot and its holder, for {@link InMemoryCommitLog#describe}. Caller holds {@link #lock}. */
    void describe(StringBuilder sb) {
        sb.append("|slot ").append(confirmed).append(" held by ")
                .append(holder == null ? "-" : holder.owner + "@" + holder.next + "/" + holder.flushed);
    }

    /** A stream on the slot. Guarded by the log's lock. */
    private final class LogStream implements CommitStream {
        final String owner;
        final long number;
        /** The index of the next log entry to return. */
        int next;
        /** The confirmation kept for the next status update. */
        long flushed;
        boolean terminated;
        boolean closed;

        LogStream(String owner, long number, int next) {
            this.owner = owner;
            this.number = number;
            this.next = next;
        }

        @Override
        public List<StreamMessage> poll(int max, Duration wait) {
            synchronized (lock) {
                if (closed || terminated) {
                    throw new StoreException("the replication stream " + number + " of " + owner + " was "
                            + (closed ? "closed" : "terminated"), null, true);
                }
                sendStatus();
                List<StreamMessage> out = new ArrayList<>();
                while (next < log.size() && out.size() < max) {
                    out.add(log.message(next++));
                }
                return out;
            }
        }

        /** Caller holds lock. The status update: the slot takes the confirmation, if this stream still holds it. */
        void sendStatus() {
            if (holder == this && flushed > confirmed) {
                confirmed = flushed;
            }
        }

        @Override
        public void confirm(long confirmPosition) {
            synchronized (lock) {
                if (confirmPosition > flushed) {
                    flushed = confirmPosition;
                }
            }
        }

        /**
         * Up to the message before the next one not returned (never at or past the end of a transaction not
         * returned whole), or the log's end when every message was returned.
         */
        @Override
        public long readPosition() {
            synchronized (lock) {
                if (next >= log.size()) {
                    return log.position();
                }
                // The end of the last transaction returned whole: ends ascend in the log.
                long nextEnd = log.message(next).endPosition();
                for (int i = next - 1; i >= 0; i--) {
                    long end = log.message(i).endPosition();
                    if (end < nextEnd) {
                        return end;
                    }
                }
                return confirmed;
            }
        }

        /** An orderly close: the last status update, then the slot is free. */
        @Override
        public void close() {
            synchronized (lock) {
                if (closed) {
                    return;
                }
                closed = true;
                if (holder == this) {
                    sendStatus();
                    holder = null;
                }
            }
        }
    }
}
