package dev.outbox.spi;

import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;

/**
 * The outbox table, as the dispatcher and the publisher see it. An implementation adapts one database; it is
 * proven by running {@code dev.outbox.testkit.StoreContract} against a real server.
 *
 * <h2>Contract shared by every method</h2>
 * <ul>
 *   <li>Implementations are thread-safe: the dispatcher marks on one thread while it purges, resets and parks
 *       on another, and applications publish concurrently from any number of threads.</li>
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
     */
    Publisher publisher();

    /**
     * Marks the oldest rows for {@code leaderId} and returns them. Atomically: takes up to {@code limit} rows
     * with the lowest ids among the committed, unparked rows whose leader id is null or differs from
     * {@code leaderId}, sets their leader id to {@code leaderId}, and returns them (with the new leader id) in
     * ascending id order.
     *
     * <ul>
     *   <li>Never returns a row that is not committed, and never blocks application transactions that insert
     *       rows; it may skip rows locked by a concurrent writer only if they are not yet committed.</li>
     *   <li>Two marks with different leader ids never both return the same row unless the second ran after the
     *       first committed (the second then "steals" it: that is how a new leader salvages rows).</li>
     *   <li>A row that cannot be read as a valid message is marked like any other but returned in
     *       {@link MarkResult#rejected()} so that the dispatcher parks it.</li>
     * </ul>
     *
     * @param leaderId the marking leader's current id, not null
     * @param limit    the most rows to mark, at least 1
     */
    MarkResult mark(UUID leaderId, int limit);

    /**
     * Whether this store implements {@link #mark}, the MARK harvest's statement. A store fed by a stream (the
     * Postgres WAL harvest) has no rows to mark and is harvested by {@link #read} only.
     */
    default boolean supportsMark() {
        return true;
    }

    /**
     * Whether this store implements {@link #read}, the cursor harvest's read. Stores that do not are harvested by
     * {@link #mark} ({@code DispatcherConfig.Harvest.MARK}).
     */
    default boolean supportsRead() {
        return false;
    }

    /**
     * Reads committed rows for a cursor harvest, changing nothing: the rows with an id above {@code after} or in
     * one of the {@code recheck} ranges, with the lowest ids first, at most {@code limit}, in ascending id order,
     * whoever marked them and whatever their next attempt time. A read never waits for, or blocks, a writer.
     *
     * <p>The result also tells how far the read could see ({@link ReadResult#gapToken()},
     * {@link ReadResult#horizon()}): ids are taken when a row is written, rows become visible when their
     * transaction commits, so a row can appear below an id the harvest has already read. The harvest remembers
     * the ids it passed without seeing (gaps) and rechecks them until a later read's horizon says they can no
     * longer commit.
     *
     * <ul>
     *   <li>Never returns a row that is not committed or that was parked.</li>
     *   <li>A row that cannot be read as a valid message is returned in {@link MarkResult#rejected()}, so that the
     *       dispatcher parks it.</li>
     *   <li>Any committed row whose id is below the highest id returned, and that matched the conditions, is
     *       returned too (the read is one snapshot).</li>
     * </ul>
     *
     * @param after   return rows with ids above this (0 for the head of the table)
     * @param recheck ranges of ids below {@code after} to return as well, if they hold committed rows; may be empty
     * @param limit   the most rows to return, at least 1
     * @throws UnsupportedOperationException if {@link #supportsRead()} is false
     */
    default ReadResult read(long after, List<IdRange> recheck, int limit) {
        throw new UnsupportedOperationException(getClass().getName() + " has no cursor read (Store.read); harvest"
                + " it with DispatcherConfig.Harvest.MARK");
    }

    /**
     * Whether {@link #read} waits for rows to arrive when none is ready (a store fed by a stream that pushes, such
     * as a replication slot) instead of returning at once. The dispatcher then reads again straight after an empty
     * read, instead of backing off up to {@code pollInterval}. A waiting read returns as soon as rows arrive and
     * waits no longer than a fraction of a second, so that the harvest still notices leadership changes quickly.
     */
    default boolean readWaits() {
        return false;
    }

    /**
     * Cuts short a {@link #read} that is {@linkplain #readWaits() waiting} for rows: it returns at once with what it
     * has. The dispatcher calls it, from another thread, when it has records to send that the wait would hold back
     * (an acknowledgement let a key's next record go); a read that is not waiting may return early once. A store whose
     * read never waits ignores it, as does the default.
     */
    default void wakeRead() {
    }

    /**
     * Asks to be told when rows may have been committed to the outbox, so that an idle leader reads at once instead
     * of at its next poll. Optional: a store that cannot tell returns null (the default) and is polled as before,
     * backing off up to {@code pollInterval} while idle. A store that can (Postgres: {@code LISTEN/NOTIFY}) calls
     * {@code wakeUp} from any thread after such a commit; it may call it spuriously or more than once per commit,
     * and should call it once after it (re)connects, since it cannot know what was committed while it was not
     * listening. The polling stays the safety net: a lost or late call delays a record until the next poll, never
     * loses it.
     *
     * <p>The dispatcher's harvesting thread subscribes when it starts harvesting (it became leader) and closes the
     * subscription when it stops ({@link #harvestStopped()}), so only the leader listens.
     *
     * @param wakeUp what to call; cheap, non-blocking and thread-safe
     * @return the subscription, closed when the harvest stops; or null if this store cannot tell
     */
    default CommitWatch watchCommits(Runnable wakeUp) {
        return null;
    }

    /**
     * A subscription to commit wake-ups ({@link #watchCommits}). Thread-safe.
     */
    interface CommitWatch extends AutoCloseable {
        /**
         * Whether the store is listening now; false while its listening connection is down and being re-opened
         * (the dispatcher polls meanwhile). For health reports.
         */
        boolean listening();

        /**
         * Whether the dispatcher needs wake-ups now: false while it reads back to back (a busy outbox; a wake-up
         * would be wasted, and listening costs the database work per commit), true before it pauses idle. A watch
         * may stop listening while not needed; when needed again it must listen again and then wake the dispatcher
         * once, for what was committed meanwhile. Called by the harvest thread, on changes only. The default
         * ignores it.
         */
        default void needed(boolean needed) {
        }

        /** Ends the subscription and releases what it holds (a connection, a thread); idempotent, never throws. */
        @Override
        void close();
    }

    /**
     * The dispatcher stopped harvesting on this instance (it is no longer leader, its leadership changed epoch, or
     * it closes): release at once what the harvest holds in the database (a replication stream, a slot), so that
     * the next leader can take it. Records read and not yet purged are forgotten: a later read finds them again.
     * Called by the harvesting thread, never concurrently with {@link #read}. The default does nothing.
     */
    default void harvestStopped() {
    }

    /**
     * The bytes the database keeps for this outbox's harvest that it could otherwise free (the write-ahead log a
     * replication slot retains), or empty for a store that keeps none. Sampled by the leader every
     * {@code metricsInterval} ({@link dev.outbox.OutboxSample#retainedBytes()}); an abandoned slot fills the disk.
     */
    default OptionalLong retainedBytes() {
        return OptionalLong.empty();
    }

    /**
     * Whether this store fences deposed leaders in the database ({@link #acquireEpoch()}, {@link #fencedBy}). A
     * store that does not (the default) is written to as before; the dispatcher then relies on its lease alone.
     */
    default boolean supportsFencing() {
        return false;
    }

    /**
     * Takes the outbox's leadership in the database: increments the outbox's leader epoch and returns the new value,
     * committed when this returns. From then on every write {@linkplain #fencedBy fenced} by an older epoch changes
     * nothing and fails with {@link StoreFencedException}; a write fenced by an older epoch that was under way when
     * the increment began either committed before it or changes nothing (the increment and the fenced writes
     * serialize on the epoch's row lock). The dispatcher calls it once per leadership, when it becomes leader and
     * before it reads or marks a row.
     *
     * @throws UnsupportedOperationException if {@link #supportsFencing()} is false
     */
    default long acquireEpoch() {
        throw new UnsupportedOperationException(getClass().getName() + " does not fence (Store.supportsFencing)");
    }

    /**
     * This store as a leader holding {@code epoch} writes to it: its {@link #mark}, {@link #purge}, {@link #reset},
     * {@link #retryLater} and {@link #park} each check, in the same statement (or under a lock held by the same
     * transaction, which {@link #acquireEpoch()} waits for), that the outbox's epoch is still {@code epoch}; if not,
     * they change nothing and throw {@link StoreFencedException}. Every other method is this store's own. Cheap to
     * call: the dispatcher takes one view per leadership.
     *
     * @throws UnsupportedOperationException if {@link #supportsFencing()} is false
     */
    default Store fencedBy(long epoch) {
        throw new UnsupportedOperationException(getClass().getName() + " does not fence (Store.supportsFencing)");
    }

    /**
     * How many shards this outbox is split into: 1 (the default) for an outbox harvested whole by one leader. A
     * sharded outbox stores each row's shard, {@link dev.outbox.OutboxShards#shardOf} of its key, and is harvested
     * shard by shard ({@link #shard}), each shard by its own leader; the {@code Dispatcher} runs one harvest per
     * shard.
     */
    default int shards() {
        return 1;
    }

    /**
     * One shard of this outbox as a store of its own, for the harvest that leads it. Its {@link #mark},
     * {@link #read}, {@link #backlog()} and {@link #oldestCreateTime()} see only the shard's rows; it fences with
     * an epoch of the shard's own ({@link #acquireEpoch()}, {@link #fencedBy}), so that shards change leaders
     * independently. {@link #purge}, {@link #reset}, {@link #retryLater} and {@link #park} act on the ids given
     * (ids are unique across the outbox). {@link #publisher()}, {@link #parked}, {@link #replay} and
     * {@link #parkedCount()} are the whole outbox's. {@link #watchCommits} may wake the shard for a commit to any
     * shard. A read passes over the ids of other shards as it passes over ids that never committed.
     *
     * <p>Cheap to call; the dispatcher takes each shard once. For an unsharded store, {@code shard(0)} is the
     * store itself.
     *
     * @param index the shard, from 0 to {@link #shards()} - 1
     * @throws IllegalArgumentException naming the index if it is out of range
     */
    default Store shard(int index) {
        dev.outbox.OutboxShards.checkIndex(index, shards());
        if (shards() == 1) {
            return this;
        }
        throw new UnsupportedOperationException(getClass().getName() + " reports " + shards()
                + " shards but does not implement Store.shard");
    }

    /**
     * Deletes the rows with the given ids, whoever marked them: they have been delivered. Ids that no longer
     * exist are ignored. An empty collection does nothing.
     */
    void purge(Collection<Long> ids);

    /**
     * Records a failed delivery of the given rows and gives them up: increments their attempt count and, for each
     * row still
     * marked with {@code leaderId}, clears the leader id so that the next mark takes it again. A row marked by
     * another leader meanwhile keeps that leader's mark. Ids that no longer exist are ignored.
     * The dispatcher no longer calls it (a failed delivery is retried by the leader from memory, see
     * {@link #retryLater}); it remains for tools that hand rows back to the next mark.
     */
    void reset(UUID leaderId, Collection<Long> ids);

    /**
     * Records a failed delivery of each given row, to be retried by the leader that holds it: increments the row's
     * attempt count and sets the earliest time of its next attempt to the time given, which later marks return in
     * {@link dev.outbox.OutboxRecord#nextAttemptAt()} so that a new leader honours it. The row keeps its leader id:
     * the dispatcher that marked it retries it from memory, without marking it again. Ids that no longer exist are
     * ignored; an empty map does nothing.
     *
     * <p>This is the dispatcher's only per-row update besides the mark, and it happens only on failure.
     *
     * @param nextAttempts id → the earliest time of the row's next delivery attempt
     */
    void retryLater(Map<Long, Instant> nextAttempts);

    /**
     * Moves the given rows out of the outbox into the parked area, with the reason given for each, their
     * attempt count and the time. Parked rows are never marked again; an operator can list them with
     * {@link #parked(int)} and put them back with {@link #replay(Collection)}. Ids that no longer exist are
     * ignored.
     *
     * @param reasons id → reason, for a human to read
     */
    void park(Map<Long, String> reasons);

    /**
     * The oldest parked rows, by ascending id, at most {@code limit}.
     */
    List<ParkedRecord> parked(int limit);

    /**
     * Puts parked rows back into the outbox as new rows (new ids, at the tail, attempts zero) and removes them
     * from the parked area, atomically. Rows that cannot be read as messages are replayed as they are and will
     * be parked again on their next mark.
     *
     * <p>A store that {@linkplain #supportsHoldKey() supports held keys} also moves, in the same transaction, every
     * outbox row of a replayed row's key whose id is above that parked row's id behind the replayed rows (new ids, in
     * their old order), so that a key's order survives the replay: the replayed rows of a key come first, in parked
     * id order, then the rows that waited behind them. Those are the rows a dispatcher holding the key
     * ({@code DispatcherConfig.AfterPark.HOLD_KEY}) kept back; with {@code MOVE_ON}, a moved row that was in flight
     * is delivered once more (after the replayed one, so that the key's latest value stays its latest).
     *
     * @return how many parked rows were replayed
     */
    int replay(Collection<Long> ids);

    /**
     * Whether this store supports {@code DispatcherConfig.AfterPark.HOLD_KEY}: it implements {@link #parkedKeys()},
     * and its {@link #replay} moves a replayed key's later outbox rows behind the replayed rows. False by default.
     */
    default boolean supportsHoldKey() {
        return false;
    }

    /**
     * The distinct keys of the rows in the parked area, of the whole outbox (a {@linkplain #shard shard} view
     * answers for the whole outbox too). A dispatcher with {@code DispatcherConfig.AfterPark.HOLD_KEY} holds these
     * keys: it reads them when it becomes leader and again every second while it leads, so what it holds is always
     * derived from the table, never from memory alone. One query; the parked area is expected to be small.
     *
     * @throws UnsupportedOperationException if {@link #supportsHoldKey()} is false
     */
    default java.util.Set<String> parkedKeys() {
        throw new UnsupportedOperationException(getClass().getName() + " cannot list its parked keys"
                + " (Store.supportsHoldKey): DispatcherConfig.AfterPark.HOLD_KEY needs it");
    }

    /**
     * The number of rows waiting in the outbox (marked or not, excluding parked rows). May be an estimate on
     * large tables; meant for monitoring and progress reports, not for correctness.
     */
    long backlog();

    /**
     * The number of rows in the parked area. May be an estimate on large tables; meant for monitoring.
     */
    long parkedCount();

    /**
     * The creation time of the head of the outbox: the unparked row with the lowest id — marked or not — which
     * is the next the dispatcher harvests; empty when the outbox has no row. The dispatcher's leader samples it
     * every {@code metricsInterval} to report the lag (the age of the oldest unpublished row), so it must be
     * cheap: one indexed lookup, never a scan of the table.
     */
    Optional<Instant> oldestCreateTime();
}
