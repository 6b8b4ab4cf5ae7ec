package dev.outbox.store.postgres;

import dev.outbox.spi.CommitLog;
import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.store.sql.SqlStore;

import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * {@link PostgresStore}'s layer for the WAL harvest ({@link PostgresStore.Builder#walHarvest}): it owns the store's
 * {@link PgWalOutbox} (null when the table is harvested), refuses a WAL harvest that is sharded or schedules
 * messages, and holds what the WAL harvest changes in the store's face — its slot, prefix and DDL, the capabilities
 * it has and has not ({@link CommitLog} instead of {@link CursorHarvest}, no mark, no fencing, no parked keys) and the
 * WAL the slot retains. Its public and protected members are {@link PostgresStore}'s; package-private so that only
 * {@link PostgresStore} is the API. Immutable and thread-safe.
 */
abstract class PostgresWalStore extends SqlStore {
    /** The WAL harvest, or null when the table is harvested. */
    private final PgWalOutbox wal;

    /**
     * Takes the store's settings ({@link SqlStore}'s constructor) and builds its WAL harvest if {@code walHarvest} is
     * set.
     *
     * @param builder    the store's settings
     * @param walHarvest the WAL harvest's settings, or null for the table harvest
     * @param shard      -1 for the whole outbox, else the shard this store is the view of
     * @throws IllegalStateException if a WAL harvest is sharded or schedules messages
     */
    PostgresWalStore(PostgresStore.Builder builder, WalHarvest walHarvest, int shard) {
        super(builder, shard, PostgresStatements::shared);
        if (walHarvest != null && shardCount() > 1) {
            throw new IllegalStateException("the WAL harvest cannot be sharded (shards(" + shardCount() + ")): it"
                    + " streams the outbox from one replication slot, read by one leader; use the table harvest"
                    + " (no walHarvest) to shard, or shards(1)");
        }
        this.wal = walHarvest == null ? null : new PgWalOutbox(walHarvest, names, transactions(),
                PostgresStatements.settings(sqlTable()), maxKeyLength());
        if (scheduling() && walHarvest != null) {
            throw new IllegalStateException("the WAL harvest (walHarvest) cannot schedule messages (scheduling(true)):"
                    + " a logical message is streamed as soon as it commits; use the table harvest to schedule");
        }
    }

    /** {@return the WAL harvest, or null when the table is harvested} */
    final PgWalOutbox wal() {
        return wal;
    }

    /**
     * Whether this store harvests the write-ahead log ({@link PostgresStore.Builder#walHarvest}) rather than its table.
     *
     * @return true with the WAL harvest, false with the table harvest
     */
    public boolean harvestsWal() {
        return wal != null;
    }

    /**
     * The replication slot of the WAL harvest.
     *
     * @return the slot's name (the one set with {@link WalHarvest.Builder#slot} or the default), or null when the
     *         table is harvested
     */
    public String slot() {
        return wal == null ? null : wal.slot();
    }

    /**
     * The prefix of this outbox's logical messages in the WAL.
     *
     * @return the prefix, or null when the table is harvested
     */
    public String walPrefix() {
        return wal == null ? null : wal.prefix();
    }

    /**
     * Creates the WAL harvest's replication slot (plugin {@code pgoutput}) and publication if they do not exist.
     * {@link #createSchema()} calls it with the WAL harvest; call it yourself if you run {@link #schemaSql()} and
     * {@link #walSchemaSql()} with your own migrations. A slot retains WAL from its creation on, whether a
     * dispatcher reads it or not: create it when the dispatcher is about to run, and drop it
     * ({@link #dropSlot()}) when the outbox is retired.
     *
     * @throws IllegalStateException with the table harvest
     */
    public void createSlot() {
        requireWal("createSlot").createSlot();
    }

    /**
     * Drops the WAL harvest's replication slot and publication, if they exist; every message not yet published is
     * lost with the slot. Fails if a dispatcher is streaming the slot at the time.
     *
     * @throws IllegalStateException with the table harvest
     */
    public void dropSlot() {
        requireWal("dropSlot").dropSlot();
    }

    /**
     * The DDL of the WAL harvest's functions ({@code <table>_emit} and {@code <table>_wal_encode}, see the
     * {@code wal.sql} resource): what plain-SQL writers call to publish. Idempotent.
     *
     * @return the DDL, names filled in; available with either harvest
     */
    public String walSchemaSql() {
        return WalSql.render(names, WalSql.prefix(names));
    }

    /**
     * The DDL of the WAL harvest's ledger table, {@code <table>_wal_ledger}: rows per slot naming the messages a
     * leader finished above the slot's confirmed position, so that the next leader does not send them again (see
     * {@link CommitLog#appendLedger}). Idempotent; {@link #createSchema()} runs it with the WAL harvest.
     *
     * @return the DDL, names filled in
     * @throws IllegalStateException with the table harvest
     */
    public String walLedgerSql() {
        return requireWal("walLedgerSql").ledgerDdl();
    }

    /** The WAL harvest for {@code operation}, which needs it. */
    private PgWalOutbox requireWal(String operation) {
        if (wal == null) {
            throw new IllegalStateException(operation + " needs the WAL harvest (PostgresStore.Builder.walHarvest);"
                    + " " + names.outbox() + " is harvested from its table");
        }
        return wal;
    }

    /**
     * Whether storage fencing is on ({@link PostgresStore.Builder#fencing}) for the table harvest. The WAL harvest is
     * not fenced by the database: its replication slot already admits one reader at a time, and a deposed leader's
     * stream is terminated by its successor's take-over.
     */
    @Override
    protected boolean fencing() {
        return super.fencing() && wal == null;
    }

    /** False with the WAL harvest: the messages are not rows that could be marked. */
    @Override
    protected boolean hasMark() {
        return wal == null;
    }

    /**
     * {@inheritDoc}
     *
     * <p>With the WAL harvest the store is a {@link CommitLog} (which the dispatcher harvests by streaming) and has
     * no {@link CursorHarvest}, {@link dev.outbox.spi.MarkHarvest}, {@link dev.outbox.spi.StorageFencing},
     * {@link dev.outbox.spi.ParkedKeys} or {@link CommitSignals}: its messages are not rows. Its {@link #purge},
     * {@link #retryLater} and {@link #park} find no rows in the table then.
     */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        if (wal != null && type == CommitLog.class) {
            return Optional.of(type.cast(wal));
        }
        if (wal != null && (type == CursorHarvest.class || type == CommitSignals.class)) {
            return Optional.empty();
        }
        return super.capability(type); // hasMark(), fencing() and hasParkedKeys() say no with the WAL harvest
    }

    /**
     * True for the table harvest: {@link #parkedKeys()}, and {@link #replay} moves a replayed key's later rows behind
     * the replayed ones. False for the WAL harvest, whose messages are not rows that a replay could move.
     */
    @Override
    protected boolean hasParkedKeys() {
        return wal == null;
    }

    /** {@code SELECT DISTINCT key} over the parked table. */
    @Override
    public Set<String> parkedKeys() {
        if (wal != null) {
            throw new UnsupportedOperationException("the WAL harvest does not hold keys (no ParkedKeys capability):"
                    + " use afterPark MOVE_ON");
        }
        return super.parkedKeys();
    }

    /**
     * With the WAL harvest: the write-ahead log the slot holds back ({@code pg_current_wal_lsn() - restart_lsn}),
     * empty if the slot does not exist; empty with the table harvest. (With the WAL harvest the dispatcher counts
     * the backlog and the head's commit time itself: what its leader received and has not finished.)
     */
    @Override
    public OptionalLong retainedBytes() {
        return wal == null ? OptionalLong.empty() : wal.retainedBytes();
    }
}
