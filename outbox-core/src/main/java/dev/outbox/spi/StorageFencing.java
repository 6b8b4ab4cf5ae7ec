package dev.outbox.spi;

/**
 * A {@link Store} capability: fencing deposed leaders in the database. With it, a leader takes the outbox's leader
 * epoch once per leadership and writes through the store {@linkplain #fencedBy fenced} by it, so that a paused or
 * cut-off ex-leader's writes are refused. Without it, the dispatcher relies on its lease alone.
 */
public interface StorageFencing {

    /**
     * Takes the outbox's leadership in the database: increments the outbox's leader epoch and returns the new value,
     * committed when this returns. From then on every write {@linkplain #fencedBy fenced} by an older epoch changes
     * nothing and fails with {@link StoreFencedException}; a write fenced by an older epoch that was under way when
     * the increment began either committed before it or changes nothing (the increment and the fenced writes
     * serialize on the epoch's row lock). The dispatcher calls it once per leadership, when it becomes leader and
     * before it reads or marks a row.
     *
     * @return the new epoch
     */
    long acquireEpoch();

    /**
     * The store as a leader holding {@code epoch} writes to it: its {@link Store#purge}, {@link Store#retryLater},
     * {@link Store#park} and its {@link MarkHarvest} capability's writes each check, in the same statement (or under a
     * lock held by the same transaction, which {@link #acquireEpoch()} waits for), that the outbox's epoch is still
     * {@code epoch}; if not, they change nothing and throw {@link StoreFencedException}. Cheap to call: the
     * dispatcher takes one view per leadership.
     *
     * @param epoch the epoch the leader took
     * @return the fenced view of the store
     */
    Store fencedBy(long epoch);
}
