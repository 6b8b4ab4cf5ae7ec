package dev.outbox.store.sql;

import dev.outbox.DispatcherConfig;

import java.time.Duration;
import java.util.Objects;

/**
 * What the builders of the database's leader transports share: the store that hosts the lease, the timings and
 * their validation ({@link SqlLeaseTimings}). Not thread-safe.
 *
 * @param <B> the concrete builder, returned by every setter
 */
abstract class SqlLeaseBuilder<B extends SqlLeaseBuilder<B>> {
    /** The delivery timeout assumed unless set: 8 s, the Kafka broker's default {@code delivery.timeout.ms}. */
    static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(8);

    final SqlStore store;
    final SqlLeaseStatements statements;
    private Duration heartbeatTimeout = DispatcherConfig.defaults().heartbeatTimeout();
    private Duration pollInterval = DispatcherConfig.defaults().pollInterval();
    private Duration deliveryTimeout = DEFAULT_DELIVERY_TIMEOUT;
    private Duration leaseDuration;
    private Duration renewInterval;
    private Duration acquireInterval;
    boolean createTable = true;

    SqlLeaseBuilder(SqlStore store) {
        this.store = Objects.requireNonNull(store, "store must not be null");
        this.statements = store.leaseStatements().orElseThrow(() -> new IllegalArgumentException(store
                + " cannot host a leader lease (its database has no lease statements): choose another leader"
                + " election for it"));
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /**
     * Takes the heartbeat timeout and the poll interval from the dispatcher's configuration: the safe way to keep
     * them equal to the dispatcher's.
     *
     * @param config the configuration the dispatcher runs with; not null. Only its heartbeat timeout and poll
     *               interval are read, now.
     * @return this builder
     * @throws NullPointerException if {@code config} is null
     */
    public B dispatcherConfig(DispatcherConfig config) {
        Objects.requireNonNull(config, "config must not be null");
        this.heartbeatTimeout = config.heartbeatTimeout();
        this.pollInterval = config.pollInterval();
        return self();
    }

    /**
     * The outbox broker's delivery timeout: how long a send may still land after the leader stopped sending (Kafka:
     * the producer's {@code delivery.timeout.ms}); default 8 s. The lease must outlast it (see
     * {@link SqlLeaseTimings}).
     *
     * @param timeout the delivery timeout; positive
     * @return this builder
     * @throws NullPointerException     if {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is below a millisecond
     */
    public B deliveryTimeout(Duration timeout) {
        this.deliveryTimeout = SqlLeaseTimings.positive("deliveryTimeout", timeout);
        return self();
    }

    /**
     * How long a lease holds after its last renewal began, on the database's clock; a crashed leader is replaced
     * about this long after its last renewal. Default max(3 × heartbeat timeout, heartbeat timeout + delivery timeout
     * + renew interval).
     *
     * @param duration the lease duration; positive, and at least heartbeat timeout + delivery timeout + renew
     *                 interval (checked by {@code build()})
     * @return this builder
     * @throws NullPointerException     if {@code duration} is null
     * @throws IllegalArgumentException if {@code duration} is below a millisecond
     */
    public B leaseDuration(Duration duration) {
        this.leaseDuration = SqlLeaseTimings.positive("leaseDuration", duration);
        return self();
    }

    /**
     * How often the holder renews its lease; also the longest a renewal may take and still confirm the leader's
     * heartbeats. Default a quarter of the heartbeat timeout.
     *
     * @param interval the renew interval; positive, and at most (heartbeat timeout - poll interval) / 2 (checked by
     *                 {@code build()})
     * @return this builder
     * @throws NullPointerException     if {@code interval} is null
     * @throws IllegalArgumentException if {@code interval} is below a millisecond
     */
    public B renewInterval(Duration interval) {
        this.renewInterval = SqlLeaseTimings.positive("renewInterval", interval);
        return self();
    }

    /**
     * How often a standby tries to take a free or expired lease: a clean hand-over takes about this long. Default
     * 500 ms, or the poll interval if that is longer. Each try is one single-row update.
     *
     * @param interval the acquire interval; positive
     * @return this builder
     * @throws NullPointerException     if {@code interval} is null
     * @throws IllegalArgumentException if {@code interval} is below a millisecond
     */
    public B acquireInterval(Duration interval) {
        this.acquireInterval = SqlLeaseTimings.positive("acquireInterval", interval);
        return self();
    }

    /**
     * Whether {@code start} creates a missing lease table (and its rows); true by default. With false, the table
     * must have been created from the store's {@code leaseStatements()} DDL; its rows are still added.
     *
     * @param create true to create a missing table
     * @return this builder
     */
    public B createTable(boolean create) {
        this.createTable = create;
        return self();
    }

    /**
     * The timings, derived and checked.
     *
     * @return the timings
     * @throws IllegalArgumentException naming the setting whose relation does not hold
     */
    SqlLeaseTimings timings() {
        return SqlLeaseTimings.of(heartbeatTimeout, pollInterval, deliveryTimeout, leaseDuration, renewInterval,
                acquireInterval);
    }
}
