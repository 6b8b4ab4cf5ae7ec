package dev.outbox.spi;

import dev.outbox.Publisher;

import java.time.Instant;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;

/**
 * The outbox table, as the dispatcher and the publisher see it: the small port every store implements. An
 * implementation adapts one database; it is proven by running {@code dev.outbox.testkit.StoreContract} against a real
 * server.
 *
 * <p>A store offers more than the four methods here through <em>capabilities</em>, optional abilities that it
 * returns from {@link #capability(Class)} (by default: itself, if it implements the capability's interface). The
 * dispatcher needs one harvest — {@link CursorHarvest} (read by cursor, changing nothing), {@link MarkHarvest}
 * (stamp rows with the leader id) or {@link CommitLog} (the outbox is a log of commits, which the dispatcher
 * streams; its rows are then not in a table, and the methods here find none) — and uses the rest when present:
 * <ul>
 *   <li>{@link StorageFencing}: deposed leaders' writes refused by the database;</li>
 *   <li>{@link CommitSignals}: wake-ups after commits, so that an idle leader reads at once;</li>
 *   <li>{@link Sharding}: the outbox split into shards, each harvested by its own leader;</li>
 *   <li>{@link ParkedRecords}: the parked area, for operators (list, count, replay);</li>
 *   <li>{@link ParkedKeys}: the parked keys, for {@code DispatcherConfig.AfterPark.HOLD_KEY};</li>
 *   <li>{@link Gauges}: backlog, age of the head, retained bytes, for health and meters.</li>
 * </ul>
 * A wrapper (a decorator that times, counts or injects faults) wraps only what it changes and forwards
 * {@link #capability} for the rest.
 *
 * <h2>Contract shared by every method</h2>
 * <ul>
 *   <li>Implementations are thread-safe: the dispatcher reads on one thread while it purges and parks on another,
 *       and applications publish concurrently from any number of threads.</li>
 *   <li>Every call is bounded in time (a statement or query timeout): a call that cannot complete fails with a
 *       {@link StoreException} rather than hanging.</li>
 *   <li>Every call that changes rows is atomic and committed when it returns normally; when it throws, it
 *       changed either all or none of the rows it was given.</li>
 *   <li>Batch methods take many ids and do their work in one statement or round trip, never one per id.</li>
 *   <li>Failures are reported as {@link StoreException} with the driver's exception as cause;
 *       {@link StoreException#isRetriable()} says whether a retry may help.</li>
 * </ul>
 */
public interface Store {

    /**
     * The publisher that writes messages to this store inside an application's transaction.
     *
     * @return the publisher; the same instance on every call
     */
    Publisher publisher();

    /**
     * Deletes the rows with the given ids, whoever harvested them: they have been delivered. Ids that no longer
     * exist are ignored. An empty collection does nothing.
     *
     * @param ids the rows' ids
     */
    void purge(Collection<Long> ids);

    /**
     * Records a failed delivery of each given row, to be retried by the leader that holds it: increments the row's
     * attempt count and sets the earliest time of its next attempt to the time given, which later reads and marks
     * return in {@link dev.outbox.OutboxRecord#nextAttemptAt()} so that a new leader honours it. The dispatcher that
     * harvested the row retries it from memory, without harvesting it again. Ids that no longer exist are ignored;
     * an empty map does nothing.
     *
     * <p>This is the dispatcher's only per-row update besides a mark, and it happens only on failure.
     *
     * @param nextAttempts id → the earliest time of the row's next delivery attempt
     */
    void retryLater(Map<Long, Instant> nextAttempts);

    /**
     * Moves the given rows out of the outbox into the parked area, with the reason given for each, their attempt
     * count and the time. Parked rows are never harvested again; an operator lists them and puts them back through
     * {@link ParkedRecords}. Ids that no longer exist are ignored.
     *
     * @param reasons id → reason, for a human to read
     */
    void park(Map<Long, String> reasons);

    /**
     * This store's {@code type} capability, if it has it: by default this store itself when it implements
     * {@code type}, else empty. A store whose abilities depend on its configuration (a store that can read by cursor
     * or by stream) overrides it; a wrapper forwards it to what it wraps for the capabilities it does not change.
     *
     * @param type the capability's interface, for example {@code StorageFencing.class}
     * @param <T>  the capability's type
     * @return the capability, or empty if this store does not have it
     */
    default <T> Optional<T> capability(Class<T> type) {
        return type.isInstance(this) ? Optional.of(type.cast(this)) : Optional.empty();
    }

    /**
     * This store's {@code type} capability, or an error naming the store and what needed it.
     *
     * @param store  the store
     * @param type   the capability's interface
     * @param reason what needs it, for the error ("the parked records API", "afterPark HOLD_KEY")
     * @param <T>    the capability's type
     * @return the capability
     * @throws IllegalArgumentException if the store does not have it
     */
    static <T> T require(Store store, Class<T> type, String reason) {
        return store.capability(type).orElseThrow(() -> new IllegalArgumentException(reason + " needs a store with "
                + type.getSimpleName() + ", and " + store.getClass().getName() + " has none"));
    }
}
