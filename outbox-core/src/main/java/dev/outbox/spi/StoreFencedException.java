package dev.outbox.spi;

/**
 * A store write was refused because another dispatcher took the outbox's leadership in the database since the
 * writer did: the outbox's leader epoch is no longer the one the write was fenced by ({@link StorageFencing#fencedBy}). The
 * write changed nothing. Never retriable: the writer is a deposed leader (a paused or partitioned process that
 * resumed after a successor took over), and the dispatcher treats it as a lost lease — it stops publishing,
 * forgets what it had in flight (the rows are the new leader's) and waits to be elected again.
 *
 * <p>Immutable; thread-safe.
 */
public final class StoreFencedException extends StoreException {
    private static final long serialVersionUID = 1L;
    /** The epoch the refused write was fenced by. */
    private final long epoch;
    /** The outbox's epoch when the write was refused, or -1 if unknown. */
    private final long currentEpoch;

    /**
     * @param operation    what was refused, for the message ("purging 12 rows of outbox")
     * @param epoch        the epoch the write was fenced by
     * @param currentEpoch the outbox's epoch in the database when the write was refused, or -1 if unknown (the row
     *                     holding it is missing)
     */
    public StoreFencedException(String operation, long epoch, long currentEpoch) {
        super(operation + " refused: fenced by leader epoch " + epoch + ", but the outbox's epoch is now "
                + (currentEpoch < 0 ? "unknown (its leader row is missing)" : String.valueOf(currentEpoch))
                + ": another dispatcher took the leadership since; this one is deposed", null, false);
        this.epoch = epoch;
        this.currentEpoch = currentEpoch;
    }

    /**
     * The epoch the refused write was fenced by.
     *
     * @return the write's epoch
     */
    public long epoch() {
        return epoch;
    }

    /**
     * The outbox's epoch when the write was refused, or -1 if unknown.
     *
     * @return the current epoch (normally greater than {@link #epoch()}), or -1
     */
    public long currentEpoch() {

        return currentEpoch;
    }
}
