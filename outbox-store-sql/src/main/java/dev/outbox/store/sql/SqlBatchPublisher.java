package dev.outbox.store.sql;

import dev.outbox.Header;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.MessageDecorators;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

/**
 * The publisher a SQL dialect gets without writing one: every message is one prepared single-row {@code INSERT}
 * added to a JDBC batch, in list order, so that the ids follow the list. The statement's parameters are the topic,
 * the key, the value, the headers (one parameter or more, as the dialect's {@link HeadersBinder} binds them) and
 * the message id ({@link SqlColumns#bindUuid}). It neither commits nor closes the connection; every message is
 * decorated and checked (key length) before anything is written; with a {@link SqlKeySequence} on, the messages are
 * numbered per (topic, key) after the checks and before the {@code INSERT}. Immutable and thread-safe; a connection must not
 * be used by two threads at once.
 */
public final class SqlBatchPublisher extends SqlPublisher {
    private final String table;
    private final String insertSql;
    private final SqlDialect dialect;
    private final HeadersBinder headers;
    private final SqlKeySequence keySequence;
    private final SqlScheduling scheduling;
    private final String scheduleSql;

    /**
     * How a dialect binds a message's headers to the {@code INSERT}'s parameters.
     */
    @FunctionalInterface
    public interface HeadersBinder {
        /**
         * Binds {@code headers} from parameter {@code index} on.
         *
         * @param connection the statement's connection, to create arrays with
         * @param statement  the {@code INSERT}
         * @param index      the first headers parameter, from 1
         * @param headers    the message's headers, in order; empty if none
         * @return the index of the parameter after the headers' (the message id's)
         * @throws SQLException as the driver throws it
         */
        int bind(Connection connection, PreparedStatement statement, int index, List<Header> headers)
                throws SQLException;
    }

    /**
     * A publisher for one outbox table.
     *
     * @param table        the outbox table as it appears in SQL, for error messages; not null
     * @param insertSql    the single-row {@code INSERT} with the parameters the class description lists; not null
     * @param maxKeyLength the longest key, in code points
     * @param decorators   applied to every message first; not null
     * @param dialect      the database's errors and column bindings; not null
     * @param headers      binds the headers; not null
     */
    public SqlBatchPublisher(String table, String insertSql, int maxKeyLength, MessageDecorators decorators,
                             SqlDialect dialect, HeadersBinder headers) {
        this(table, insertSql, maxKeyLength, decorators, dialect, headers, SqlKeySequence.off());
    }

    /**
     * A publisher for one outbox table that numbers its messages per (topic, key) if {@code keySequence} is on:
     * after the checks, {@link SqlKeySequence#number} runs its counter upserts, then the rows are inserted.
     *
     * @param table        the outbox table as it appears in SQL, for error messages; not null
     * @param insertSql    the single-row {@code INSERT} with the parameters the class description lists; not null
     * @param maxKeyLength the longest key, in code points
     * @param decorators   applied to every message first; not null
     * @param dialect      the database's errors and column bindings; not null
     * @param headers      binds the headers; not null
     * @param keySequence  the per-key sequence, or {@link SqlKeySequence#off()}; not null
     */
    public SqlBatchPublisher(String table, String insertSql, int maxKeyLength, MessageDecorators decorators,
                             SqlDialect dialect, HeadersBinder headers, SqlKeySequence keySequence) {
        this(table, insertSql, maxKeyLength, decorators, dialect, headers, keySequence, null, null);
    }

    /**
     * As above, and with {@code scheduling} (null for none) delayed messages, and the messages without a time of a
     * held key ({@link SqlScheduling#route}), are written with {@code scheduleSql} into the scheduled table.
     *
     * @param table        the outbox table as it appears in SQL, for error messages; not null
     * @param insertSql    the single-row {@code INSERT} with the parameters the class description lists; not null
     * @param maxKeyLength the longest key, in code points
     * @param decorators   applied to every message first; not null
     * @param dialect      the database's errors and column bindings; not null
     * @param headers      binds the headers; not null
     * @param keySequence  the per-key sequence, or {@link SqlKeySequence#off()}; not null
     * @param scheduling   the scheduled table's routing, or null if scheduling is off
     * @param scheduleSql  the scheduled table's single-row {@code INSERT}: the parameters of {@code insertSql}, then
     *                     the due time's two ({@link SqlScheduling#bindDue}); null if {@code scheduling} is
     */
    public SqlBatchPublisher(String table, String insertSql, int maxKeyLength, MessageDecorators decorators,
                             SqlDialect dialect, HeadersBinder headers, SqlKeySequence keySequence,
                             SqlScheduling scheduling, String scheduleSql) {
        super(maxKeyLength, decorators);
        if ((scheduling == null) != (scheduleSql == null)) {
            throw new IllegalArgumentException("scheduling and scheduleSql must be both null or both set");
        }
        this.scheduling = scheduling;
        this.scheduleSql = scheduleSql;
        this.table = Objects.requireNonNull(table, "table must not be null");
        this.insertSql = Objects.requireNonNull(insertSql, "insertSql must not be null");
        this.dialect = Objects.requireNonNull(dialect, "dialect must not be null");
        this.headers = Objects.requireNonNull(headers, "headers must not be null");
        this.keySequence = Objects.requireNonNull(keySequence, "keySequence must not be null");
    }

    @Override
    public void publish(Connection connection, List<OutboxMessage> input) {
        Objects.requireNonNull(connection, "connection must not be null");
        List<OutboxMessage> decorated = decorate(Objects.requireNonNull(input, "messages must not be null"));
        for (int i = 0; i < decorated.size(); i++) {
            keySequence.check(i, check(i, decorated.get(i)));
            if (scheduling != null) {
                SqlScheduling.check(i, decorated.get(i));
            }
        }
        List<OutboxMessage> messages = claimIdempotencyKeys(connection, decorated);
        try {
            messages = keySequence.number(connection, messages);
        } catch (SQLException e) {
            throw dialect.errors().translate("numbering " + decorated.size() + " message(s) of " + table
                    + " per key", e);
        }
        boolean[] scheduled = null;
        if (scheduling != null) {
            try {
                scheduled = scheduling.route(connection, messages);
            } catch (SQLException e) {
                throw dialect.errors().translate("looking for waiting messages of " + messages.size()
                        + " message(s)' keys in the scheduled table of " + table, e);
            }
        }
        if (scheduled != null) {
            write(connection, scheduleSql, messages, scheduled, true, "the scheduled table of " + table);
        }
        write(connection, insertSql, messages, scheduled, false, table);
    }

    /** Writes the messages whose {@code scheduled} flag is {@code which} (all of them if there are no flags). */
    private void write(Connection connection, String sql, List<OutboxMessage> messages, boolean[] scheduled,
                       boolean which, String where) {
        int count = 0;
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            for (int i = 0; i < messages.size(); i++) {
                if ((scheduled == null ? false : scheduled[i]) != which) {
                    continue;
                }
                OutboxMessage m = messages.get(i);
                statement.setString(1, m.topic());
                statement.setString(2, m.key());
                statement.setBytes(3, m.value());
                int next = headers.bind(connection, statement, 4, m.headers());
                dialect.columns().bindUuid(statement, next, MessageIds.next());
                if (which) {
                    SqlScheduling.bindDue(statement, next + 1, i, m);
                }
                statement.addBatch();
                count++;
            }
            if (count > 0) {
                statement.executeBatch();
            }
        } catch (SQLException e) {
            throw dialect.errors().translate("writing " + count + " message(s) to " + where, e);
        }
    }

    @Override
    protected boolean schedules() {
        return scheduling != null;
    }

    @Override
    public String insertSql() {
        return insertSql;
    }
}
