package dev.outbox.internal;

/**
 * Bugs the engine can be told to commit, for the simulation to prove that it finds them
 * ({@link EngineRuntime#planted(PlantedBug)}). Production runtimes plant none. Not part of the public API.
 */
public enum PlantedBug {
    /** Purge a record's row as soon as it is sent, before the broker acknowledged it. */
    PURGE_BEFORE_ACK,
    /** Lower a key's barrier (let its next record go) before the acknowledged record's purge committed. */
    BARRIER_BEFORE_PURGE,
    /** Let the cursor pass an id whose transaction is still open, never rechecking it. */
    CURSOR_SKIPS_OPEN,
    /** Hand leadership over without waiting for the records in flight (no flush). */
    NO_FLUSH_ON_HANDOVER,
    /** Queue a failed record behind its key's later records instead of at its head. */
    RETRY_OVERTAKES_HEAD
}
