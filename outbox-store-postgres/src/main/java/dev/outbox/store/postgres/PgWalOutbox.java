package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.CommitLog;
import dev.outbox.spi.CommitStream;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlTransactions;
import org.jdbi.v3.core.argument.Argument;

import javax.sql.DataSource;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The WAL harvest of one Postgres outbox ({@link PostgresStore.Builder#walHarvest}), the store's {@link CommitLog}: the
 * leader streams the committed logical messages from a replication slot ({@link PgOutputStream}) into the
 * dispatcher's stream harvest; the ledger table ({@code <table>_wal_ledger}) names the messages finished above the
 * slot's confirmed position; a park writes a message to the parked table under its WAL position as id, a replay
 * emits parked messages again. The slot and its publication ({@link ReplicationSlots}) and the WAL functions ({@link WalSql}) are created
 * with the schema. Immutable and thread-safe.
 */
final class PgWalOutbox implements CommitLog {
    private final WalHarvest wal;
    private final SqlTableNames names;
    private final SqlTransactions tx;
    private final String settings;
    private final int maxKeyLength;
    private final String prefix;
    private final String slot;
    private final String publication;
    /**
     * Plain connections as the WAL harvest's user (its URL and properties, without replication): for the slot's
     * creation, its state and the take-over of a deposed leader's stream.
     */
    private final DataSource connections;
    private final String ledgerDdl;
    private final String saveLedgerSql;
    private final String loadLedgerSql;
    private final String parkSql;
    private final String replaySql;
    private final String retainedSql;

    /** @param settings the statement that begins each transaction (the statement timeout) */
    PgWalOutbox(WalHarvest wal, SqlTableNames names, SqlTransactions tx, String settings, int maxKeyLength) {
        this.wal = wal;
        this.names = names;
        this.tx = tx;
        this.settings = settings;
        this.maxKeyLength = maxKeyLength;
        this.prefix = WalSql.prefix(names);
        this.slot = wal.slot() != null ? wal.slot() : defaultSlot(wal.url(), names);
        this.publication = wal.publication() != null ? wal.publication() : names.table() + "_publication";
        this.connections = plainConnections(wal);
        String p = names.parked();
        String ledger = (names.schema() == null ? "" : '"' + names.schema() + "\".") + '"' + names.table()
                + "_wal_ledger\"";
        // One row per append (a purge batch), so that a purge pays for what it finished, not for everything kept.
        this.ledgerDdl = "CREATE TABLE IF NOT EXISTS " + ledger + " (slot text NOT NULL, max_end bigint NOT NULL,"
                + " positions bigint[] NOT NULL, ends bigint[] NOT NULL, saved_at timestamptz NOT NULL DEFAULT now());"
                + " CREATE INDEX IF NOT EXISTS \"" + names.table() + "_wal_ledger_slot\" ON " + ledger
                + " (slot, max_end)";
        // One statement: the slot's confirmed position (what the server has, not what the stream last sent), the
        // rows it vouches for deleted, the new entries inserted as one row unless the position vouches for them
        // too; it returns the position, below which the harvest forgets its entries.
        this.saveLedgerSql = "WITH s AS (SELECT COALESCE((SELECT CAST(pg_wal_lsn_diff(confirmed_flush_lsn, '0/0') AS"
                + " bigint) FROM pg_replication_slots WHERE slot_name = ?), 0) AS c),"
                + " gone AS (DELETE FROM " + ledger + " WHERE slot = ? AND max_end <= (SELECT c FROM s)),"
                + " added AS (INSERT INTO " + ledger + " (slot, max_end, positions, ends)"
                + " SELECT ?, ?, ?, ? FROM s WHERE ? > s.c)"
                + " SELECT c FROM s";
        this.loadLedgerSql = "SELECT positions, ends FROM " + ledger + " WHERE slot = ?";
        // A parked WAL message keeps its log position as its id: parking it again (its confirmation was lost and a
        // new stream delivered it again) changes nothing.
        this.parkSql = "INSERT INTO " + p + " (id, create_time, topic, key, value, header_names, header_values,"
                + " attempts, reason, parked_at, message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, now(), ?)"
                + " ON CONFLICT (id) DO NOTHING";
        // A replayed message carries the header outbox-replayed, its parked id (its former WAL position).
        // The WAL functions' names exist only for a table short enough for them (WalSql.MAX_TABLE_LENGTH).
        this.replaySql = "WITH moved AS (DELETE FROM " + p + " WHERE id = ANY(?)"
                + " RETURNING id, topic, key, value, header_names, header_values, message_id)"
                + " SELECT count(pg_logical_emit_message(true, ?, " + WalSql.encodeFunction(names)
                + "(topic, key, value, " + PostgresStatements.REPLAYED_NAMES + ", " + PostgresStatements.REPLAYED_VALUES
                + ", message_id))) FROM (SELECT * FROM moved ORDER BY id) m";
        this.retainedSql = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots"
                + " WHERE slot_name = ?";
    }

    /** How long a read waits for a message ({@link WalHarvest#readWait()}). */
    @Override
    public Duration readWait() {
        return wal.readWait();
    }

    String prefix() {
        return prefix;
    }

    String slot() {
        return slot;
    }

    /** The write-ahead log the slot holds back, empty if the slot does not exist. */
    OptionalLong retainedBytes() {
        return tx.inTransaction("reading the WAL retained by slot " + slot, settings, handle ->
                handle.createQuery(retainedSql).bind(0, slot).mapTo(Long.class).findOne()
                        .map(OptionalLong::of).orElse(OptionalLong.empty()));
    }

    /** Emits the parked messages again, in parked id order, and deletes them from the parked table. */
    int replay(Long[] ids) {
        return tx.inTransaction("replaying " + ids.length + " parked messages into the WAL of " + names.outbox(),
                settings, handle -> handle.createQuery(replaySql).bind(0, PostgresHarvest.bigints(ids))
                        .bind(1, prefix).mapTo(Integer.class).one());
    }

    /** Creates the WAL functions and the ledger table, in the schema's transaction. */
    void createSchema(Statement statement) throws SQLException {
        statement.execute(WalSql.render(names, prefix));
        statement.execute(ledgerDdl);
    }

    String ledgerDdl() {
        return ledgerDdl;
    }

    void createSlot() {
        ReplicationSlots.createSlotAndPublication(connections, slot, publication);
    }

    void dropSlot() {
        ReplicationSlots.dropSlotAndPublication(connections, slot, publication);
    }

    /**
     * Writes WAL messages to the parked table, each under its log position as id. A message that cannot be decoded
     * is parked with its raw content as the value, an empty topic and key, and the decoding error as its reason.
     */
    @Override
    public void park(List<Parked> messages) {
        if (messages.isEmpty()) {
            return;
        }
        tx.inTransaction("parking " + messages.size() + " WAL messages of " + names.outbox(), settings, handle -> {
            var batch = handle.prepareBatch(parkSql);
            for (Parked p : messages) {
                CommitStream.StreamMessage m = p.message();
                batch.bind(0, m.position()).bind(1, m.commitTime().atOffset(ZoneOffset.UTC));
                if (p.row() instanceof MarkedRow.Readable readable) {
                    OutboxRecord r = readable.record();
                    List<Header> headers = r.message().headers();
                    String[] headerNames = headers.stream().map(Header::name).toArray(String[]::new);
                    byte[][] values = headers.stream().map(Header::value).toArray(byte[][]::new);
                    batch.bind(2, r.message().topic()).bind(3, r.message().key()).bind(4, r.message().value())
                            .bind(5, array("text", headerNames)).bind(6, array("bytea", values))
                            .bind(7, r.attempts()).bind(9, PostgresHarvest.uuid(r.messageId()));
                } else {
                    batch.bind(2, "").bind(3, "").bind(4, m.payload()).bind(5, array("text", new String[0]))
                            .bind(6, array("bytea", new byte[0][])).bind(7, 0).bind(9, PostgresHarvest.uuid(null));
                }
                batch.bind(8, PostgresColumns.INSTANCE.storable(p.reason() == null ? "(no reason given)" : p.reason()))
                        .add();
            }
            batch.execute();
            return null;
        });
    }

    /** Opens the replication stream of the WAL harvest: called by the first read of a leadership. */
    @Override
    public CommitStream open() {
        return PgOutputStream.open(WalStreamSettings.of(
                        PgOutputStream.replicationConnections(wal.url(), wal.properties()), connections, slot,
                        publication, prefix)
                .withStatusInterval(wal.statusInterval())
                .withTakeOverTimeout(wal.takeoverTimeout())
                .withBufferedMessages(wal.maxBuffered()));
    }

    /**
     * Adds the WAL messages just finished to the ledger table as one row, and deletes the rows the slot's confirmed
     * position vouches for (see {@link CommitLog#appendLedger}): one statement per purge batch, whose cost is that of
     * the batch, not of everything the ledger keeps.
     */
    @Override
    public long appendLedger(Map<Long, Long> finished) {
        Long[] positions = new Long[finished.size()];
        Long[] ends = new Long[finished.size()];
        long maxEnd = 0;
        int i = 0;
        for (Map.Entry<Long, Long> e : finished.entrySet()) {
            positions[i] = e.getKey();
            ends[i++] = e.getValue();
            maxEnd = Math.max(maxEnd, e.getValue());
        }
        long last = maxEnd;
        return tx.inTransaction("saving the WAL ledger of slot " + slot, settings, handle ->
                handle.createQuery(saveLedgerSql).bind(0, slot).bind(1, slot).bind(2, slot).bind(3, last)
                        .bind(4, PostgresHarvest.bigints(positions)).bind(5, PostgresHarvest.bigints(ends))
                        .bind(6, last).mapTo(Long.class).one());
    }

    @Override
    public Map<Long, Long> loadLedger() {
        Map<Long, Long> kept = new HashMap<>();
        tx.inTransaction("loading the WAL ledger of slot " + slot, settings, handle ->
                handle.createQuery(loadLedgerSql).bind(0, slot).map((rs, ctx) -> {
                    Long[] positions = (Long[]) rs.getArray(1).getArray();
                    Long[] ends = (Long[]) rs.getArray(2).getArray();
                    for (int n = 0; n < positions.length && n < ends.length; n++) {
                        kept.put(positions[n], ends[n]);
                    }
                    return positions.length;
                }).list());
        return kept;
    }

    /** Decodes a streamed message: a record, or a rejected row naming what is wrong with it. */
    @Override
    public MarkedRow decode(long id, CommitStream.StreamMessage message) {
        WalCodec.Decoded d = WalCodec.decode(message.payload(), maxKeyLength);
        if (d.error() != null) {
            return new MarkResult.Rejected(id, "", "", 0, "undecodable WAL message at LSN "
                    + lsn(message.position()) + ": " + d.error());
        }
        return new MarkedRow.Readable(new OutboxRecord(id, message.commitTime(), d.message(), 0, null,
                d.messageId()));
    }

    private static String lsn(long position) {
        return Long.toHexString(position >>> 32).toUpperCase(Locale.ROOT) + "/"
                + Long.toHexString(position & 0xFFFFFFFFL).toUpperCase(Locale.ROOT);
    }

    /**
     * The default slot name: slots are named per server, not per database, so the name holds the database (from the
     * URL), the schema if configured, and the table: {@code <database>_[<schema>_]<table>_slot}, in {@code [a-z0-9_]},
     * shortened with a hash when longer than 63 characters.
     */
    static String defaultSlot(String url, SqlTableNames names) {
        String database = url.replaceFirst("^jdbc:postgresql:(//[^/]*/?)?", "").replaceFirst("[?;].*$", "");
        String base = (database.isEmpty() ? "" : database + "_") + (names.schema() == null ? "" : names.schema() + "_")
                + names.table();
        base = base.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
        String name = base + "_slot";
        if (name.length() > 63) {
            name = base.substring(0, 45) + "_" + String.format("%08x", base.hashCode()) + "_slot";
        }
        return name;
    }

    private static DataSource plainConnections(WalHarvest wal) {
        org.postgresql.ds.PGSimpleDataSource ds = new org.postgresql.ds.PGSimpleDataSource();
        ds.setURL(wal.url());
        wal.properties().forEach((k, v) -> {
            try {
                ds.setProperty(String.valueOf(k), String.valueOf(v));
            } catch (SQLException e) {
                throw new IllegalArgumentException("the WAL harvest's connection property " + k + " is not one the"
                        + " Postgres driver knows", e);
            }
        });
        return ds;
    }

    private static Argument array(String type, Object[] values) {
        return (position, statement, context) ->
                statement.setArray(position, statement.getConnection().createArrayOf(type, values));
    }
}
