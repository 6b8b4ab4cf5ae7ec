package dev.outbox.store.postgres;

import javax.sql.DataSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * What a {@link PgOutputStream} needs: where to connect, which slot and publication to read, which messages are
 * the outbox's, and its timings and memory bound. Immutable and thread-safe (the suppliers it holds must be).
 *
 * @param replicationConnections gives a fresh replication connection ({@code replication=database}) at each call;
 *                               see {@link PgOutputStream#replicationConnections}. A failure to connect is thrown
 *                               as an unchecked exception; the stream reports it as a retriable
 *                               {@link dev.outbox.spi.StoreException}.
 * @param connections            ordinary connections, for the queries about the slot ({@code pg_replication_slots},
 *                               {@code pg_terminate_backend}, re-creating an invalidated slot)
 * @param slot                   the logical replication slot (plugin {@code pgoutput}): lower-case letters, digits
 *                               and underscores, at most 63, as Postgres requires
 * @param publication            the publication named to {@code pgoutput}; it may publish no table (only
 *                               messages are wanted): a Postgres identifier of at most 63 characters
 * @param messagePrefix          only transactional logical messages whose prefix equals this are returned; not
 *                               empty, no NUL character
 * @param statusInterval         how often the stream reports its position to the server, whether or not the
 *                               harvest keeps up; must be well below the server's {@code wal_sender_timeout}
 *                               (60 s by default). From 10 ms to 1 h.
 * @param takeOverTimeout        how long {@link PgOutputStream#open} waits for another connection streaming the
 *                               slot to let it go before it terminates that connection's backend; zero takes over
 *                               at once
 * @param bufferedMessages       how many messages read but not yet polled the stream holds in memory; when as
 *                               many are buffered, it stops reading (one transaction is always held whole, so a
 *                               transaction with more messages than this is buffered whole). At least 1.
 */
record WalStreamSettings(Supplier<Connection> replicationConnections, DataSource connections, String slot,
                         String publication, String messagePrefix, Duration statusInterval,
                         Duration takeOverTimeout, int bufferedMessages) {
    private static final Pattern SLOT = Pattern.compile("[a-z0-9_]{1,63}");

    /** Defaults for the timings and the bound: status every second, take over after 10 s, 10,000 messages. */
    static final Duration DEFAULT_STATUS_INTERVAL = Duration.ofSeconds(1);
    static final Duration DEFAULT_TAKE_OVER_TIMEOUT = Duration.ofSeconds(10);
    static final int DEFAULT_BUFFERED_MESSAGES = 10_000;

    WalStreamSettings {
        Objects.requireNonNull(replicationConnections, "replicationConnections");
        Objects.requireNonNull(connections, "connections");
        Objects.requireNonNull(slot, "slot");
        Objects.requireNonNull(publication, "publication");
        Objects.requireNonNull(messagePrefix, "messagePrefix");
        Objects.requireNonNull(statusInterval, "statusInterval");
        Objects.requireNonNull(takeOverTimeout, "takeOverTimeout");
        if (!SLOT.matcher(slot).matches()) {
            throw new IllegalArgumentException("slot '" + slot + "' is not a replication slot name: lower-case "
                    + "letters, digits and underscores, 1 to 63 of them");
        }
        if (publication.isEmpty() || publication.length() > 63 || publication.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("publication '" + publication
                    + "' is not a Postgres identifier: 1 to 63 characters, no NUL");
        }
        if (messagePrefix.isEmpty() || messagePrefix.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("messagePrefix '" + messagePrefix
                    + "' must not be empty nor contain a NUL character");
        }
        if (statusInterval.compareTo(Duration.ofMillis(10)) < 0 || statusInterval.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("statusInterval " + statusInterval + " is not between 10 ms and 1 h "
                    + "(it must stay well below the server's wal_sender_timeout)");
        }
        if (takeOverTimeout.isNegative()) {
            throw new IllegalArgumentException("takeOverTimeout " + takeOverTimeout + " is negative");
        }
        if (bufferedMessages < 1) {
            throw new IllegalArgumentException("bufferedMessages " + bufferedMessages + " is below 1");
        }
    }

    /** Settings with the default timings and bound. */
    static WalStreamSettings of(Supplier<Connection> replicationConnections, DataSource connections, String slot,
                                String publication, String messagePrefix) {
        return new WalStreamSettings(replicationConnections, connections, slot, publication, messagePrefix,
                DEFAULT_STATUS_INTERVAL, DEFAULT_TAKE_OVER_TIMEOUT, DEFAULT_BUFFERED_MESSAGES);
    }

    WalStreamSettings withStatusInterval(Duration interval) {
        return new WalStreamSettings(replicationConnections, connections, slot, publication, messagePrefix,
                interval, takeOverTimeout, bufferedMessages);
    }

    WalStreamSettings withTakeOverTimeout(Duration timeout) {
        return new WalStreamSettings(replicationConnections, connections, slot, publication, messagePrefix,
                statusInterval, timeout, bufferedMessages);
    }

    WalStreamSettings withBufferedMessages(int messages) {
        return new WalStreamSettings(replicationConnections, connections, slot, publication, messagePrefix,
                statusInterval, takeOverTimeout, messages);
    }

    @Override
    public String toString() {
        return "WalStreamSettings[slot=" + slot + ", publication=" + publication + ", messagePrefix="
                + messagePrefix + ", statusInterval=" + statusInterval + ", takeOverTimeout=" + takeOverTimeout
                + ", bufferedMessages=" + bufferedMessages + "]";
    }
}
