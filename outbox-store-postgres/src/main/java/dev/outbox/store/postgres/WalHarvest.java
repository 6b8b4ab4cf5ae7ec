package dev.outbox.store.postgres;

import java.time.Duration;
import java.util.Objects;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * The WAL harvest of a {@link PostgresStore}: publishers emit each message into Postgres' write-ahead log as a
 * transactional logical message ({@code pg_logical_emit_message(true, ...)}) instead of inserting a row, and the
 * leading dispatcher streams the committed messages, in commit order, from a logical replication slot. Chosen with
 * {@link PostgresStore.Builder#walHarvest(WalHarvest)}; without it the store harvests its table.
 *
 * <pre>{@code
 * PostgresStore store = PostgresStore.builder(dataSource)
 *         .walHarvest(WalHarvest.builder("jdbc:postgresql://db:5432/app")
 *                 .user("outbox_replicator").password(secret)
 *                 .build())
 *         .build();
 * store.createSchema();   // the parked table, the emit functions, the slot and the publication
 * }</pre>
 *
 * <p>The server needs {@code wal_level = logical} and a free WAL sender and replication slot per outbox; the user
 * needs the {@code REPLICATION} attribute (or to be a superuser). See the README's "Choosing a harvest".
 *
 * <p>Immutable and thread-safe. Its {@link #toString()} never shows the password.
 */
public final class WalHarvest {

    /**
     * Default time between status updates to the server: how late the slot learns what was confirmed, hence how
     * much a leader that dies without closing its stream makes the next one deliver again, and how much the
     * ledger of messages finished above the slot's position holds (see {@code StreamHarvest.Ledger}).
     */
    public static final Duration DEFAULT_STATUS_INTERVAL = Duration.ofMillis(250);
    /** Default time a new leader waits for a deposed one to release the slot before it terminates its backend. */
    public static final Duration DEFAULT_TAKEOVER_TIMEOUT = Duration.ofSeconds(30);
    /** Default longest time a harvest read waits for a new message before the engine looks around. */
    public static final Duration DEFAULT_READ_WAIT = Duration.ofMillis(100);
    /** Default bound on messages read from the server and not yet taken by the engine. */
    public static final int DEFAULT_MAX_BUFFERED = 10_000;

    private static final Pattern SLOT_NAME = Pattern.compile("[a-z0-9_]{1,63}");

    private final String url;
    private final Properties properties;
    private final String slot;
    private final String publication;
    private final Duration statusInterval;
    private final Duration takeoverTimeout;
    private final Duration readWait;
    private final int maxBuffered;

    private WalHarvest(Builder b) {
        this.url = b.url;
        this.properties = new Properties();
        this.properties.putAll(b.properties);
        this.slot = b.slot;
        this.publication = b.publication;
        this.statusInterval = b.statusInterval;
        this.takeoverTimeout = b.takeoverTimeout;
        this.readWait = b.readWait;
        this.maxBuffered = b.maxBuffered;
    }

    /**
     * Starts the settings for replication connections to {@code jdbcUrl} ({@code jdbc:postgresql://...}, the
     * database the outbox lives in). The driver's replication properties are added to it.
     *
     * @param jdbcUrl the URL; it must start with {@code jdbc:postgresql:} and must not hold a password
     * @return a new builder with the defaults
     * @throws IllegalArgumentException if {@code jdbcUrl} is null, not a Postgres URL or holds a password
     */
    public static Builder builder(String jdbcUrl) {
        return new Builder(jdbcUrl);
    }

    /**
     * The JDBC URL replication connections are opened to.
     *
     * @return the URL given to {@link #builder(String)}; never null
     */
    public String url() {
        return url;
    }

    /**
     * A copy of the connection properties (user, password, ssl...), without the replication ones.
     *
     * @return a new, modifiable copy on each call; changing it changes nothing here
     */
    public Properties properties() {
        Properties copy = new Properties();
        copy.putAll(properties);
        return copy;
    }

    /**
     * The replication slot's name, or null for the default, {@code <database>_[<schema>_]<table>_slot} (slot names
     * are unique per server, not per database).
     *
     * @return the slot's name as set, or null
     */
    public String slot() {
        return slot;
    }

    /**
     * The publication's name, or null for the default, {@code <table>_publication}.
     *
     * @return the publication's name as set, or null
     */
    public String publication() {
        return publication;
    }

    /**
     * How often the stream reports its confirmed position to the server ({@link Builder#statusInterval}).
     *
     * @return the interval; default {@link #DEFAULT_STATUS_INTERVAL}
     */
    public Duration statusInterval() {
        return statusInterval;
    }

    /**
     * How long a new leader waits for a deposed one to release the slot ({@link Builder#takeoverTimeout}).
     *
     * @return the timeout, positive; default {@link #DEFAULT_TAKEOVER_TIMEOUT}
     */
    public Duration takeoverTimeout() {
        return takeoverTimeout;
    }

    /**
     * The longest a harvest read waits for a message ({@link Builder#readWait}).
     *
     * @return the wait, positive and at most 1 s; default {@link #DEFAULT_READ_WAIT}
     */
    public Duration readWait() {
        return readWait;
    }

    /**
     * The most messages read from the server and not yet taken by the engine ({@link Builder#maxBuffered}).
     *
     * @return the bound, at least 1; default {@link #DEFAULT_MAX_BUFFERED}
     */
    public int maxBuffered() {
        return maxBuffered;
    }

    @Override
    public String toString() {
        return "WalHarvest{url=" + url + ", user=" + properties.getProperty("user") + ", slot=" + slot
                + ", publication=" + publication + ", statusInterval=" + statusInterval + ", takeoverTimeout="
                + takeoverTimeout + ", readWait=" + readWait + ", maxBuffered=" + maxBuffered + '}';
    }

    /** Builds {@link WalHarvest} settings. Not thread-safe. */
    public static final class Builder {
        private final String url;
        private final Properties properties = new Properties();
        private String slot;
        private String publication;
        private Duration statusInterval = DEFAULT_STATUS_INTERVAL;
        private Duration takeoverTimeout = DEFAULT_TAKEOVER_TIMEOUT;
        private Duration readWait = DEFAULT_READ_WAIT;
        private int maxBuffered = DEFAULT_MAX_BUFFERED;

        private Builder(String url) {
            if (url == null || !url.startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("the replication JDBC URL must start with jdbc:postgresql:, was "
                        + (url == null ? "null" : "'" + url.replaceAll("password=[^&]*", "password=***") + "'"));
            }
            if (url.contains("password=")) {
                throw new IllegalArgumentException("the replication JDBC URL must not hold a password (it would reach"
                        + " logs): set it with password(...)");
            }
            this.url = url;
        }

        /**
         * The user of replication connections; it needs the REPLICATION attribute.
         *
         * @param user the user name; not null
         * @return this builder
         * @throws NullPointerException if {@code user} is null
         */
        public Builder user(String user) {
            properties.setProperty("user", Objects.requireNonNull(user, "user must not be null"));
            return this;
        }

        /**
         * The password of replication connections; never logged.
         *
         * @param password the password; not null
         * @return this builder
         * @throws NullPointerException if {@code password} is null
         */
        public Builder password(String password) {
            properties.setProperty("password", Objects.requireNonNull(password, "password must not be null"));
            return this;
        }

        /**
         * Any other driver property of replication connections (ssl, sslmode, ...); setting one twice keeps the last.
         *
         * @param name the property's name, as the Postgres JDBC driver spells it; not null
         * @param value its value; not null
         * @return this builder
         * @throws NullPointerException if {@code name} or {@code value} is null
         */
        public Builder property(String name, String value) {
            properties.setProperty(Objects.requireNonNull(name, "name must not be null"),
                    Objects.requireNonNull(value, "value of " + name + " must not be null"));
            return this;
        }

        /**
         * The replication slot's name ({@code [a-z0-9_]}, at most 63 characters, unique on the server); default
         * {@code <database>_[<schema>_]<table>_slot}.
         *
         * @param slot the slot's name
         * @return this builder
         * @throws IllegalArgumentException if {@code slot} is null or not 1 to 63 of {@code [a-z0-9_]}
         */
        public Builder slot(String slot) {
            this.slot = name("slot", slot);
            return this;
        }

        /**
         * The publication's name ({@code [a-z0-9_]}, at most 63); default {@code <table>_publication}.
         *
         * @param publication the publication's name
         * @return this builder
         * @throws IllegalArgumentException if {@code publication} is null or not 1 to 63 of {@code [a-z0-9_]}
         */
        public Builder publication(String publication) {
            this.publication = name("publication", publication);
            return this;
        }

        /**
         * How often the stream reports its confirmed position to the server; 10 ms to 1 h, default 250 ms.
         *
         * @param statusInterval the interval; not null
         * @return this builder
         * @throws IllegalArgumentException if {@code statusInterval} is null, zero or negative; a positive value
         *         outside 10 ms to 1 h is rejected only when a leader opens the replication stream
         */
        public Builder statusInterval(Duration statusInterval) {
            this.statusInterval = positive("statusInterval", statusInterval);
            return this;
        }

        /**
         * How long a new leader waits for the slot while another connection still streams it (a deposed leader
         * that has not noticed yet) before it terminates that connection's backend; positive, default 30 s. Keep it
         * above the dispatcher's heartbeat timeout, so that a live deposed leader lets go by itself first.
         *
         * @param takeoverTimeout the timeout
         * @return this builder
         * @throws IllegalArgumentException if {@code takeoverTimeout} is null, zero or negative
         */
        public Builder takeoverTimeout(Duration takeoverTimeout) {
            this.takeoverTimeout = positive("takeoverTimeout", takeoverTimeout);
            return this;
        }

        /**
         * The longest a harvest read waits for a message to arrive before the engine looks around (leadership,
         * retries); a message that arrives ends the wait at once. Positive, at most 1 s; default 100 ms.
         *
         * @param readWait the wait
         * @return this builder
         * @throws IllegalArgumentException if {@code readWait} is null, not positive or above 1 s
         */
        public Builder readWait(Duration readWait) {
            positive("readWait", readWait);
            if (readWait.compareTo(Duration.ofSeconds(1)) > 0) {
                throw new IllegalArgumentException("readWait must be at most 1s, was " + readWait);
            }
            this.readWait = readWait;
            return this;
        }

        /**
         * The most messages read from the server and not yet taken by the engine; at least 1, default 10,000.
         *
         * @param maxBuffered the bound
         * @return this builder
         * @throws IllegalArgumentException if {@code maxBuffered} is below 1
         */
        public Builder maxBuffered(int maxBuffered) {
            if (maxBuffered < 1) {
                throw new IllegalArgumentException("maxBuffered must be at least 1, was " + maxBuffered);
            }
            this.maxBuffered = maxBuffered;
            return this;
        }

        /**
         * The settings as set so far; the builder can go on being used.
         *
         * @return new immutable settings
         */
        public WalHarvest build() {

            return new WalHarvest(this);
        }

        private static String name(String what, String value) {
            if (value == null || !SLOT_NAME.matcher(value).matches()) {
                throw new IllegalArgumentException(what + " must be 1 to 63 of [a-z0-9_], was "
                        + (value == null ? "null" : "'" + value + "'"));
            }
            return value;
        }

        private static Duration positive(String what, Duration value) {
            if (value == null || value.isZero() || value.isNegative()) {
                throw new IllegalArgumentException(what + " must be positive, was " + value);
            }
            return value;
        }
    }
}
