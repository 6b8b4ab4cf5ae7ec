package dev.outbox.store.postgres;

import dev.outbox.spi.CommitSignals;

import dev.outbox.spi.Backoff;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The Postgres store's commit wake-ups ({@link dev.outbox.spi.CommitSignals#watchCommits}): one connection of the store's pool, held for
 * as long as the subscription lasts, {@code LISTEN}s on the outbox's channel, and a thread of its own calls the
 * wake-up whenever a notification arrives (the publisher's {@code pg_notify}, delivered by Postgres at commit, or
 * the optional trigger's). A lost connection is opened again with a backoff from 100 ms to 5 s; meanwhile the
 * dispatcher polls, and the wake-up is called once after each (re)connection, for what was committed while it was
 * down. An idle connection is checked with {@code SELECT 1} every few seconds, so that a silently dead one is
 * noticed. While the dispatcher is busy ({@link #needed} false: it reads back to back) it {@code UNLISTEN}s, so that
 * the server does not signal it at every commit for nothing; needed again, it listens again and wakes the
 * dispatcher once. Closing it {@code UNLISTEN}s and gives the connection back to the pool before {@link #close}
 * returns (waiting at most {@value #CLOSE_WAIT_MILLIS} ms), so that a pool closed right after does not abort a
 * connection still in use; a failure that the close itself causes is logged at DEBUG, not as a lost connection.
 *
 * <p>Thread-safe.
 */
final class PgCommitListener implements CommitSignals.CommitWatch {
    private static final Logger log = LoggerFactory.getLogger(PgCommitListener.class);
    /** How long one wait for notifications lasts: how soon a close is noticed. */
    private static final int WAIT_MILLIS = 250;
    /** How long an idle listening connection goes unchecked. */
    private static final long CHECK_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final Backoff RECONNECT = Backoff.exponential(Duration.ofMillis(100), Duration.ofSeconds(5));
    /** How long {@link #close} waits for the listening thread to give its connection back. */
    static final long CLOSE_WAIT_MILLIS = 5_000;

    private final Jdbi jdbi;
    private final String channel;
    private final Runnable wakeUp;
    private final Thread thread;
    private volatile boolean closed;
    /** Whether the connection is up (listening, or ready to listen again when needed). */
    private volatile boolean listening;
    /** Whether the dispatcher wants wake-ups now ({@link #needed}). */
    private volatile boolean wanted = true;
    /** The listening connection's server process id, 0 while none; for tests. */
    private volatile int backendPid;

    /**
     * Starts listening on {@code channel} (a notification channel name, not quoted) with a connection of
     * {@code jdbi}, calling {@code wakeUp} on every notification.
     */
    PgCommitListener(Jdbi jdbi, String channel, Runnable wakeUp) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.channel = Objects.requireNonNull(channel, "channel");
        this.wakeUp = Objects.requireNonNull(wakeUp, "wakeUp");
        this.thread = new Thread(this::run, "outbox-listen-" + channel);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    @Override
    public boolean listening() {
        return listening;
    }

    /** The listening connection's server process id, 0 while none. */
    int backendPid() {
        return backendPid;
    }

    @Override
    public void needed(boolean needed) {
        wanted = needed;
        LockSupport.unpark(thread);
    }

    /**
     * Stops listening: the thread {@code UNLISTEN}s, gives its connection back to the pool and ends; this waits for
     * that for at most {@value #CLOSE_WAIT_MILLIS} ms (not when called on the listening thread itself, from a
     * wake-up).
     */
    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        if (Thread.currentThread() == thread) {
            return;
        }
        try {
            thread.join(CLOSE_WAIT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (thread.isAlive()) {
            log.warn("The commit listener of channel {} did not stop within {} ms; its connection may still be in use",
                    channel, CLOSE_WAIT_MILLIS);
        }
    }

    private void run() {
        Backoff.Sequence reconnects = RECONNECT.sequence();
        boolean down = false;
        while (!closed) {
            try (Handle handle = jdbi.open()) {
                Connection connection = handle.getConnection();
                PGConnection pg = connection.unwrap(PGConnection.class);
                backendPid = pg.getBackendPID();
                execute(connection, "SELECT 1");
                listening = true;
                if (down) {
                    log.info("Listening for commits on channel {} again", channel);
                    down = false;
                }
                reconnects.reset();
                try {
                    listen(connection, pg);
                } finally {
                    listening = false;
                    backendPid = 0;
                    if (!connection.isClosed()) {
                        execute(connection, "UNLISTEN " + quote(channel)); // the connection goes back to the pool
                    }
                }
            } catch (SQLException | RuntimeException e) {
                listening = false;
                if (closed) {
                    log.debug("The commit listener of channel {} failed while closing: {}", channel, e.toString());
                    break;
                }
                Duration backoff = reconnects.next();
                if (!down) {
                    log.warn("Lost the connection listening for commits on channel {}; polling until it is back"
                            + " (retrying in {}): {}", channel, backoff, e.toString());
                    down = true;
                }
                wakeUp.run(); // a commit may have gone unheard
                LockSupport.parkNanos(this, backoff.toNanos());
            }
        }
    }

    /**
     * Listens while wanted (waking the dispatcher once each time it starts, for what was committed before), stops
     * listening while not, and checks an idle connection now and then.
     */
    private void listen(Connection connection, PGConnection pg) throws SQLException {
        long lastHeard = System.nanoTime();
        boolean on = false;
        while (!closed) {
            boolean want = wanted;
            if (want != on) {
                execute(connection, (want ? "LISTEN " : "UNLISTEN ") + quote(channel));
                on = want;
                if (on) {
                    wakeUp.run(); // whatever was committed before this connection listened
                }
                lastHeard = System.nanoTime();
            }
            if (on) {
                PGNotification[] got = pg.getNotifications(WAIT_MILLIS);
                if (got != null && got.length > 0) {
                    wakeUp.run();
                    lastHeard = System.nanoTime();
                    continue;
                }
            } else {
                LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS));
            }
            if (System.nanoTime() - lastHeard > CHECK_NANOS) {
                execute(connection, "SELECT 1"); // a connection that died silently fails here
                lastHeard = System.nanoTime();
            }
        }
    }

    private static void execute(Connection connection, String sql) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.setQueryTimeout(10);
            statement.execute(sql);
        }
        if (!connection.getAutoCommit()) {
            connection.commit(); // LISTEN takes effect at commit
        }
    }

    private static String quote(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    /**
     * The notification channel of an outbox: its table's name, schema-qualified if a schema is set, shortened with
     * a hash past Postgres' 63-byte identifier limit.
     */
    static String channel(String schema, String table) {
        String full = (schema == null ? "" : schema + ".") + table;
        if (full.length() <= 63) {
            return full;
        }
        return full.substring(0, 54) + "_" + String.format("%08x", full.hashCode());
    }
}
