package dev.outbox.store.postgres;

import dev.outbox.spi.StoreException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.OptionalLong;

/**
 * The logical replication slot and publication of the WAL harvest: their creation and removal, the slot's state
 * (who streams it, whether Postgres invalidated it), its re-creation after an invalidation, the take-over from a
 * deposed holder and the WAL it retains. Needs the {@code REPLICATION} attribute (or superuser); every failure is a
 * {@link StoreException} naming the slot, retriable as the SQLSTATE says. Stateless.
 */
final class ReplicationSlots {
    private static final Logger LOG = LoggerFactory.getLogger(PgOutputStream.class);

    private ReplicationSlots() {
    }

    /**
     * Creates the publication (publishing no table: only messages are wanted) and the logical replication slot with
     * the {@code pgoutput} plugin, each unless it exists. Creating a slot waits for the transactions running at that
     * moment to end. Needs the {@code REPLICATION} attribute (or superuser) and, for the publication, the
     * {@code CREATE} privilege on the database.
     *
     * @throws StoreException if the database refuses; retriable as the SQLSTATE says
     */
    static void createSlotAndPublication(DataSource dataSource, String slot, String publication) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(true);
            if (!exists(c, "SELECT 1 FROM pg_publication WHERE pubname = ?", publication)) {
                try (Statement s = c.createStatement()) {
                    s.execute("CREATE PUBLICATION " + PgOutputStream.quoteIdentifier(publication));
                    LOG.info("Created publication {}", publication);
                } catch (SQLException e) {
                    if (!exists(c, "SELECT 1 FROM pg_publication WHERE pubname = ?", publication)) {
                        throw e;
                    }
                }
            }
            if (!exists(c, "SELECT 1 FROM pg_replication_slots WHERE slot_name = ?", slot)) {
                try (PreparedStatement s = c.prepareStatement(
                        "SELECT lsn FROM pg_create_logical_replication_slot(?, 'pgoutput')")) {
                    s.setString(1, slot);
                    try (ResultSet rs = s.executeQuery()) {
                        rs.next();
                        LOG.info("Created replication slot {} at {}", slot, rs.getString(1));
                    }
                } catch (SQLException e) {
                    if (!exists(c, "SELECT 1 FROM pg_replication_slots WHERE slot_name = ?", slot)) {
                        throw e;
                    }
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot create replication slot " + slot + " and publication " + publication
                    + " (SQLSTATE " + e.getSQLState() + "): " + e.getMessage(), e, PgOutputStream.retriable(e));
        }
    }

    /**
     * Drops the slot (terminating a connection that streams it) and the publication, each if it exists. Dropping
     * the slot lets Postgres remove the WAL it retained; messages not yet streamed are lost.
     */
    static void dropSlotAndPublication(DataSource dataSource, String slot, String publication) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(true);
            try (PreparedStatement s = c.prepareStatement("SELECT pg_terminate_backend(active_pid, 5000) "
                    + "FROM pg_replication_slots WHERE slot_name = ? AND active_pid IS NOT NULL")) {
                s.setString(1, slot);
                s.executeQuery().close();
            }
            try (PreparedStatement s = c.prepareStatement(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ?")) {
                s.setString(1, slot);
                s.executeQuery().close();
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP PUBLICATION IF EXISTS " + PgOutputStream.quoteIdentifier(publication));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot drop replication slot " + slot + " and publication " + publication
                    + " (SQLSTATE " + e.getSQLState() + "): " + e.getMessage(), e, PgOutputStream.retriable(e));
        }
    }

    /**
     * The WAL the slot holds back, in bytes: {@code pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)}. The
     * slot's {@code restart_lsn}, not its {@code confirmed_flush_lsn}, because it is what keeps WAL files on disk
     * (decoding restarts there, to rebuild the transactions in progress at the confirmed point): it is the disk an
     * abandoned slot fills. Empty if the slot does not exist or has lost its WAL (invalidated).
     */
    static OptionalLong retainedBytes(Connection connection, String slot) throws SQLException {
        try (PreparedStatement s = connection.prepareStatement("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), "
                + "restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?")) {
            s.setString(1, slot);
            try (ResultSet rs = s.executeQuery()) {
                if (!rs.next()) {
                    return OptionalLong.empty();
                }
                long bytes = rs.getLong(1);
                return rs.wasNull() ? OptionalLong.empty() : OptionalLong.of(bytes);
            }
        }
    }

    record SlotState(int activePid, boolean invalidated, long confirmedFlush, String reason) {
    }

    static SlotState state(WalStreamSettings settings) {
        try (Connection c = settings.connections().getConnection();
             PreparedStatement s = c.prepareStatement("SELECT plugin, database = current_database(), active_pid, "
                     + "wal_status, confirmed_flush_lsn::text, to_jsonb(r) ->> 'invalidation_reason', "
                     + "EXISTS (SELECT 1 FROM pg_publication WHERE pubname = ?) "
                     + "FROM pg_replication_slots r WHERE slot_name = ?")) {
            s.setString(1, settings.publication());
            s.setString(2, settings.slot());
            try (ResultSet rs = s.executeQuery()) {
                if (!rs.next()) {
                    throw new StoreException("replication slot " + settings.slot() + " does not exist: create it "
                            + "(and the publication " + settings.publication() + ") first", null, false);
                }
                if (!"pgoutput".equals(rs.getString(1)) || !rs.getBoolean(2)) {
                    throw new StoreException("replication slot " + settings.slot() + " is not a pgoutput slot of "
                            + "this database (plugin " + rs.getString(1) + ")", null, false);
                }
                if (!rs.getBoolean(7)) {
                    throw new StoreException("publication " + settings.publication() + " (of replication slot "
                            + settings.slot() + ") does not exist: create it first", null, false);
                }
                int pid = rs.getInt(3);
                String walStatus = rs.getString(4);
                String confirmedFlush = rs.getString(5);
                String reason = rs.getString(6);
                boolean invalidated = "lost".equals(walStatus) || reason != null;
                return new SlotState(pid, invalidated, confirmedFlush == null ? 0 : PgOutputStream.parseLsn(confirmedFlush),
                        reason != null ? reason : "wal_status " + walStatus);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the state of replication slot " + settings.slot() + " (SQLSTATE "
                    + e.getSQLState() + "): " + e.getMessage(), e, PgOutputStream.retriable(e));
        }
    }

    static void recreateInvalidated(WalStreamSettings settings, SlotState lost) {
        try (Connection c = settings.connections().getConnection()) {
            c.setAutoCommit(true);
            try (PreparedStatement s = c.prepareStatement("SELECT pg_terminate_backend(active_pid, 5000) "
                    + "FROM pg_replication_slots WHERE slot_name = ? AND active_pid IS NOT NULL")) {
                s.setString(1, settings.slot());
                s.executeQuery().close();
            }
            try (PreparedStatement s = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
                s.setString(1, settings.slot());
                s.executeQuery().close();
            }
            String start;
            try (PreparedStatement s = c.prepareStatement(
                    "SELECT lsn::text FROM pg_create_logical_replication_slot(?, 'pgoutput')")) {
                s.setString(1, settings.slot());
                try (ResultSet rs = s.executeQuery()) {
                    rs.next();
                    start = rs.getString(1);
                }
            }
            LOG.error("Replication slot {} was invalidated ({}): Postgres removed WAL it still needed. It was "
                    + "dropped and created again. Messages committed after {} (the position the slot had confirmed) "
                    + "and before {} (where the new slot starts) are LOST from the stream: they must be found and "
                    + "replayed by hand", settings.slot(), lost.reason(), PgOutputStream.lsn(lost.confirmedFlush()), start);
        } catch (SQLException e) {
            throw new StoreException("cannot re-create the invalidated replication slot " + settings.slot()
                    + " (SQLSTATE " + e.getSQLState() + "): " + e.getMessage(), e, PgOutputStream.retriable(e));
        }
    }

    static void terminate(WalStreamSettings settings, int pid, long waitedNanos) {
        LOG.warn("Replication slot {} is still streamed by backend pid {} after {}: terminating it to take the slot "
                + "over", settings.slot(), pid, Duration.ofNanos(waitedNanos));
        try (Connection c = settings.connections().getConnection();
             PreparedStatement s = c.prepareStatement("SELECT pg_terminate_backend(?, 5000)")) {
            s.setInt(1, pid);
            s.executeQuery().close();
        } catch (SQLException e) {
            throw new StoreException("cannot terminate backend pid " + pid + " streaming replication slot "
                    + settings.slot() + " (SQLSTATE " + e.getSQLState() + "): " + e.getMessage(), e, PgOutputStream.retriable(e));
        }
    }

    private static boolean exists(Connection c, String sql, String name) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, name);
            try (ResultSet rs = s.executeQuery()) {
                return rs.next();
            }
        }
    }
}
