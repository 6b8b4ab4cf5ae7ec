package dev.outbox.testkit;

import dev.outbox.DuplicateMessageException;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.DeliveryOptions;
import dev.outbox.spi.IdempotencyKeys;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spi.Store;

import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The delivery options of {@link OutboxMessage} — not before, idempotency keys — for an {@link InMemoryStore}, as a
 * store that wraps it: the in-memory model of what the SQL stores do with a scheduled table and an idempotency table,
 * for engine tests and the simulation. Its clock stands for the database's.
 *
 * <ul>
 *   <li><b>Not before</b> (with {@link Builder#scheduling()}): a delayed message waits here, and so does a message of a
 *       key (topic and key) that has one waiting (the key is held, keeping its order); {@link #releaseDue} moves due
 *       messages into the wrapped store, a key's in order and never one before an earlier one of its key that is not
 *       yet due. With {@link Builder#scheduledHoldsKey scheduledHoldsKey(false)} only delayed messages wait, and a
 *       release moves every due one, whatever waits before it.</li>
 *   <li><b>Idempotency keys</b> (with {@link Builder#idempotencyKeys}): a message whose key was written within the
 *       retention is skipped, or the publish call refused with {@link DuplicateMessageException}; the first of a call
 *       wins over a repeat in the same call.</li>
 * </ul>
 * Everything else is the wrapped store's: purges, parks, harvests and its other capabilities. Thread-safe: a publish
 * call and a release are atomic with respect to each other.
 */
public final class InMemoryDeliveryOptions implements Store, ScheduledMessages, IdempotencyKeys {
    /** What a duplicate idempotency key does. */
    public enum OnDuplicate {
        /** The duplicate is not written; the rest of the call is. */
        SKIP,
        /** The call is refused with {@link DuplicateMessageException}; nothing of it is written. */
        FAIL
    }

    private final InMemoryStore store;
    private final Clock clock;
    private final boolean scheduling;
    private final boolean holdsKey;
    private final Duration retention;
    private final OnDuplicate onDuplicate;
    private final Object lock = new Object();
    /** Waiting messages by their order of writing. Guarded by {@link #lock}. */
    private final Map<Long, Waiting> waiting = new LinkedHashMap<>();
    /** The idempotency keys written, with the time of their writing. Guarded by {@link #lock}. */
    private final Map<String, Instant> keys = new HashMap<>();
    private long nextOrder;
    private long duplicates;
    private final Publisher publisher = new OptionsPublisher();

    private record Waiting(long order, Instant due, OutboxMessage message) {
        String topicKey() {
            return message.topic() + '\u0000' + message.key();
        }
    }

    private InMemoryDeliveryOptions(Builder b) {
        this.store = b.store;
        this.clock = b.clock;
        this.scheduling = b.scheduling;
        this.holdsKey = b.holdsKey;
        this.retention = b.retention;
        this.onDuplicate = b.onDuplicate;
    }

    /**
     * Starts wrapping {@code store}, with neither option on.
     *
     * @param store the store the messages go into; not null
     * @return a builder
     */
    public static Builder wrap(InMemoryStore store) {
        return new Builder(Objects.requireNonNull(store, "store must not be null"));
    }

    /**
     * The wrapped store.
     *
     * @return the store the messages go into
     */
    public InMemoryStore store() {
        return store;
    }

    /**
     * Messages waiting for their time, or behind one of their key that waits.
     *
     * @return the count
     */
    public int waitingCount() {
        synchronized (lock) {
            return waiting.size();
        }
    }

    /**
     * Duplicates skipped or refused so far.
     *
     * @return the count
     */
    public long duplicates() {
        synchronized (lock) {
            return duplicates;
        }
    }

    @Override
    public Publisher publisher() {
        return publisher;
    }

    @Override
    public void purge(java.util.Collection<Long> ids) {
        store.purge(ids);
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        store.retryLater(nextAttempts);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        store.park(reasons);
    }

    @Override
    public <T> Optional<T> capability(Class<T> type) {
        if (type == ScheduledMessages.class) {
            return scheduling ? Optional.of(type.cast(this)) : Optional.empty();
        }
        if (type == IdempotencyKeys.class) {
            return retention != null ? Optional.of(type.cast(this)) : Optional.empty();
        }
        return store.capability(type);
    }

    @Override
    public Release releaseDue(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        synchronized (lock) {
            Instant now = clock.instant();
            List<OutboxMessage> moved = new ArrayList<>();
            Set<String> blocked = new HashSet<>();
            for (Iterator<Waiting> it = waiting.values().iterator(); it.hasNext() && moved.size() < limit; ) {
                Waiting w = it.next();
                if (blocked.contains(w.topicKey())) {
                    continue;
                }
                if (w.due().isAfter(now)) {
                    if (holdsKey) {
                        blocked.add(w.topicKey()); // a later message of its key waits behind it
                    }
                    continue;
                }
                moved.add(w.message());
                it.remove();
            }
            if (!moved.isEmpty()) {
                store.publisher().publish(null, moved);
            }
            Instant next = null;
            for (Waiting w : waiting.values()) {
                next = next == null || w.due().isBefore(next) ? w.due() : next;
            }
            return new Release(moved.size(), next == null ? null : Duration.between(now, next));
        }
    }

    @Override
    public int deleteExpired(int limit) {
        synchronized (lock) {
            Instant now = clock.instant();
            int deleted = 0;
            for (Iterator<Instant> it = keys.values().iterator(); it.hasNext() && deleted < limit; ) {
                if (expired(it.next(), now)) {
                    it.remove();
                    deleted++;
                }
            }
            return deleted;
        }
    }

    /**
     * The idempotency keys kept now, expired or not.
     *
     * @return the count
     */
    public int idempotencyKeyCount() {
        synchronized (lock) {
            return keys.size();
        }
    }

    private boolean expired(Instant written, Instant now) {
        return !written.plus(retention).isAfter(now);
    }

    private final class OptionsPublisher implements Publisher {
        @Override
        public void publish(Connection connection, List<OutboxMessage> messages) {
            Objects.requireNonNull(messages, "messages must not be null");
            DeliveryOptions.check(messages, scheduling, retention != null, "this InMemoryDeliveryOptions (built"
                    + " without " + (scheduling ? "idempotencyKeys" : "scheduling") + ")");
            synchronized (lock) {
                Instant now = clock.instant();
                List<OutboxMessage> kept = new ArrayList<>(messages.size());
                Set<String> seen = new HashSet<>();
                List<String> claimed = new ArrayList<>(); // only the keys written now: a duplicate renews nothing
                for (int i = 0; i < messages.size(); i++) {
                    OutboxMessage m = Objects.requireNonNull(messages.get(i), "message " + i + " must not be null");
                    String key = m.idempotencyKey();
                    Instant written = key == null ? null : keys.get(key);
                    if (key != null && (!seen.add(key) || written != null && !expired(written, now))) {
                        duplicates++;
                        if (onDuplicate == OnDuplicate.FAIL) {
                            throw new DuplicateMessageException("message " + i + " (topic '" + m.topic() + "', key '"
                                    + m.key() + "') has the idempotency key '" + key + "', written before", key);
                        }
                        continue;
                    }
                    if (key != null) {
                        claimed.add(key);
                    }
                    kept.add(m);
                }
                List<OutboxMessage> direct = new ArrayList<>(kept.size());
                Set<String> held = new HashSet<>();
                if (holdsKey) {
                    for (Waiting w : waiting.values()) {
                        held.add(w.topicKey());
                    }
                }
                for (OutboxMessage m : kept) {
                    String topicKey = m.topic() + '\u0000' + m.key();
                    if (m.isDelayed() || held.contains(topicKey)) {
                        Instant due = m.deliverAt() != null ? m.deliverAt()
                                : m.deliverAfter() != null ? now.plus(m.deliverAfter()) : now;
                        waiting.put(nextOrder, new Waiting(nextOrder, due, m.withoutDeliveryOptions()));
                        nextOrder++;
                        if (holdsKey) {
                            held.add(topicKey);
                        }
                    } else {
                        direct.add(m.withoutDeliveryOptions());
                    }
                }
                if (!direct.isEmpty()) {
                    store.publisher().publish(connection, direct);
                }
                for (String key : claimed) {
                    keys.put(key, now);
                }
            }
        }

        @Override
        public String toString() {
            return "InMemoryDeliveryOptions.publisher";
        }
    }

    /** Builds an {@link InMemoryDeliveryOptions}; not thread-safe. */
    public static final class Builder {
        private final InMemoryStore store;
        private Clock clock = Clock.systemUTC();
        private boolean scheduling;
        private boolean holdsKey = true;
        private Duration retention;
        private OnDuplicate onDuplicate = OnDuplicate.SKIP;

        private Builder(InMemoryStore store) {
            this.store = store;
        }

        /**
         * The clock that stands for the database's (due times, retention); the system clock by default.
         *
         * @param clock not null
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock must not be null");
            return this;
        }

        /**
         * Carries out "not before", holding a key behind its waiting messages.
         *
         * @return this builder
         */
        public Builder scheduling() {
            this.scheduling = true;
            return this;
        }

        /**
         * With {@link #scheduling()}: whether a waiting message holds its key (the default, {@code true}), as the SQL
         * stores' {@code scheduledHoldsKey}: {@code false} sends a message without a time straight into the wrapped
         * store, and releases every due message at its own time, whatever waits before it.
         *
         * @param holdsKey true to hold a key behind its waiting messages, false not to
         * @return this builder
         */
        public Builder scheduledHoldsKey(boolean holdsKey) {
            this.holdsKey = holdsKey;
            return this;
        }

        /**
         * Keeps idempotency keys for {@code retention} after their writing.
         *
         * @param retention   positive
         * @param onDuplicate what a duplicate does
         * @return this builder
         * @throws IllegalArgumentException if {@code retention} is not positive
         */
        public Builder idempotencyKeys(Duration retention, OnDuplicate onDuplicate) {
            if (retention == null || retention.isZero() || retention.isNegative()) {
                throw new IllegalArgumentException("retention must be positive: " + retention);
            }
            this.retention = retention;
            this.onDuplicate = Objects.requireNonNull(onDuplicate, "onDuplicate must not be null");
            return this;
        }

        /**
         * The store.
         *
         * @return a new store wrapping the given one
         * @throws IllegalStateException if {@code scheduledHoldsKey(false)} is set without {@code scheduling()}
         */
        public InMemoryDeliveryOptions build() {
            if (!holdsKey && !scheduling) {
                throw new IllegalStateException("scheduledHoldsKey(false) needs scheduling(): without it no message"
                        + " waits");
            }
            return new InMemoryDeliveryOptions(this);
        }
    }
}
