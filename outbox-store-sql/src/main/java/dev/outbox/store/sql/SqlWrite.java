package dev.outbox.store.sql;

import java.util.List;
import java.util.Objects;

/**
 * One of a store's batch writes (purge, reset, failure record, park, discard) as data: the statements it runs on each
 * batch of ids, in one transaction, and the fenced statement that does the same work and checks the leader's epoch,
 * written out in full. How ids and values are bound (as arrays, one statement per call; or as {@code IN} lists, a
 * statement per chunk) is the dialect's {@link IdBinding}; a step's SQL holds {@code ${ids}} and {@code ${pairs}}
 * where a list binding expands its placeholders. Immutable and thread-safe.
 *
 * @param steps  the statements run on each batch, in order; at least one
 * @param fenced the fenced statement, or null: the fence's value is its first parameter, the batch's follow as in
 *               the single step; it returns one row whose first column is the epoch it saw (null if it saw none), and
 *               changes rows only if that is the fence's. Null for a dialect that fences a write by a locking read
 *               first ({@link SqlStatements#fenceLock()})
 */
public record SqlWrite(List<Step> steps, String fenced) {

    /**
     * Checks and copies the components.
     *
     * @param steps  the statements run on each batch, in order; not null, at least one, no null element
     * @param fenced the fenced statement, or null; only with a single step
     * @throws IllegalArgumentException if {@code steps} is empty, or {@code fenced} is set for several steps
     */
    public SqlWrite {
        steps = List.copyOf(steps);
        if (steps.isEmpty()) {
            throw new IllegalArgumentException("a write needs at least one statement");
        }
        if (fenced != null && steps.size() != 1) {
            throw new IllegalArgumentException("a fenced statement stands for a single step, not " + steps.size());
        }
    }

    /**
     * A write of one statement, with its fenced variant (or null).
     *
     * @param step   the statement; not null
     * @param fenced the fenced statement, or null (a fence then takes a locking read first)
     * @return the write
     */
    public static SqlWrite of(Step step, String fenced) {
        return new SqlWrite(List.of(step), fenced);
    }

    /**
     * A write of these statements, fenced by a locking read first.
     *
     * @param steps the statements, in order; at least one, none null
     * @return the write
     * @throws IllegalArgumentException if there is no step
     */
    public static SqlWrite of(Step... steps) {
        return new SqlWrite(List.of(steps), null);
    }

    /** Whether a step binds an id's value with each id ({@link Kind#PAIRS}), which halves a list's chunk. */
    boolean hasPairs() {
        return steps.stream().anyMatch(s -> s.kind() == Kind.PAIRS);
    }

    /** What a step binds, after the fence's value in a fenced statement. */
    public enum Kind {
        /** The batch's ids. */
        IDS,
        /** A leader id, then the batch's ids. */
        LEADER_THEN_IDS,
        /**
         * Each id with its value: as arrays, the ids then the values; as lists, each id and its value (in
         * {@code ${pairs}}, which repeats {@link Step#pair()}) then the ids (in {@code ${ids}}).
         */
        PAIRS,
        /**
         * A locking read of the batch's ids, returning those that exist: the following steps run on those only,
         * and not at all if none exists.
         */
        LOCK
    }

    /**
     * One statement of a write.
     *
     * @param kind what it binds
     * @param sql  its SQL, with {@code ${ids}} (and for {@link Kind#PAIRS}, {@code ${pairs}}) where a list binding
     *             expands placeholders
     * @param pair the SQL {@code ${pairs}} repeats for each id, such as {@code " WHEN ? THEN ?"}; null unless the
     *             kind is {@link Kind#PAIRS} and ids are bound as lists
     */
    public record Step(Kind kind, String sql, String pair) {
        /**
         * Checks the components.
         *
         * @param kind what it binds; not null
         * @param sql  its SQL; not null
         * @param pair the SQL {@code ${pairs}} repeats for each id, or null
         * @throws NullPointerException if {@code kind} or {@code sql} is null
         */
        public Step {
            Objects.requireNonNull(kind, "kind must not be null");
            Objects.requireNonNull(sql, "sql must not be null");
        }

        /**
         * A step that binds no pair template.
         *
         * @param kind what it binds; not null
         * @param sql  its SQL; not null
         * @return the step, whose {@link #pair()} is null
         * @throws NullPointerException if {@code kind} or {@code sql} is null
         */

        public static Step of(Kind kind, String sql) {
            return new Step(kind, sql, null);
        }
    }
}
