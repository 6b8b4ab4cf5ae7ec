package dev.outbox.store.postgres;

import javax.sql.DataSource;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A logical replication slot ({@code pgoutput}) read with plain SQL, for tests: what a harvest would be streamed.
 * Dropped on {@link #close()}, since a slot left behind keeps the server's WAL for every other test.
 */
final class LogicalSlot implements AutoCloseable {
    private final DataSource dataSource;
    private final String name;
    private final String publication;

    /** Creates slot {@code name} (it sees what commits from now on) reading through {@code publication}. */
    LogicalSlot(DataSource dataSource, String name, String publication) {
        this.dataSource = dataSource;
        this.name = name;
        this.publication = publication;
        run("SELECT pg_create_logical_replication_slot(?, 'pgoutput')", name);
    }

    /** A logical message as pgoutput sends it ('M'). */
    record Message(boolean transactional, long lsn, String prefix, byte[] content) {
        @Override
        public String toString() {
            return "Message{" + prefix + ", " + content.length + " bytes}";
        }
    }

    /** Creates an empty publication if there is none of that name: pgoutput needs one, logical messages none. */
    static void createPublication(DataSource dataSource, String publication) {
        PostgresTestSupport.execute(dataSource, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_publication WHERE pubname"
                + " = '" + publication + "') THEN CREATE PUBLICATION " + publication + "; END IF; END $$");
    }

    /** Consumes what committed since the last call and returns its logical messages with {@code prefix}, in order. */
    List<Message> take(String prefix) {
        List<Message> messages = new ArrayList<>();
        try (Connection connection = dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement("SELECT data FROM"
                     + " pg_logical_slot_get_binary_changes(?, NULL, NULL, 'proto_version', '1', 'publication_names',"
                     + " ?, 'messages', 'true')")) {
            flushWal(connection);
            statement.setString(1, name);
            statement.setString(2, publication);
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    Message message = parse(rs.getBytes(1));
                    if (message != null && message.prefix().equals(prefix)) {
                        messages.add(message);
                    }
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("reading slot " + name, e);
        }
        return messages;
    }

    /**
     * Decoding reads the WAL only as far as it is flushed to disk, and the embedded test server commits
     * asynchronously ({@code synchronous_commit = off}): a commit's record may not be flushed for a while after the
     * commit returned. A transaction that writes WAL (here, a logical message of another prefix) and commits
     * synchronously waits for the WAL to be flushed through its commit record, so every earlier commit is then
     * readable. (A transaction that only took an id writes no WAL before its commit record and commits
     * asynchronously whatever the setting.)
     */
    private static void flushWal(Connection connection) throws SQLException {
        boolean autoCommit = connection.getAutoCommit();
        connection.setAutoCommit(false);
        try (var statement = connection.createStatement()) {
            statement.execute("SET LOCAL synchronous_commit = on");
            statement.execute("SELECT pg_logical_emit_message(true, 'dev.outbox.test:flush', '')");
            connection.commit();
        } finally {
            connection.setAutoCommit(autoCommit);
        }
    }

    /** 'M', int8 flags (1: transactional), int64 lsn, the prefix NUL-terminated, int32 length, the content. */
    private static Message parse(byte[] data) {
        if (data.length == 0 || data[0] != 'M') {
            return null;
        }
        ByteBuffer in = ByteBuffer.wrap(data);
        in.get();
        boolean transactional = (in.get() & 1) != 0;
        long lsn = in.getLong();
        int start = in.position();
        while (data[in.position()] != 0) {
            in.get();
        }
        String prefix = new String(data, start, in.position() - start, StandardCharsets.UTF_8);
        in.get();
        int length = in.getInt();
        byte[] content = Arrays.copyOfRange(data, in.position(), in.position() + length);
        if (in.position() + length != data.length) {
            throw new IllegalStateException("a logical message of " + data.length + " bytes holds " + length
                    + " bytes of content at offset " + in.position());
        }
        return new Message(transactional, lsn, prefix, content);
    }

    @Override
    public void close() {
        run("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ?", name);
    }

    private void run(String sql, String argument) {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, argument);
            statement.executeQuery().close();
        } catch (SQLException e) {
            throw new IllegalStateException(sql + " with " + argument, e);
        }
    }
}
