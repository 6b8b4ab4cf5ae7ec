package dev.outbox.testkit;

import java.util.Map;
import java.util.TreeMap;

/**
 * The stream harvest's ledger as an {@link InMemoryCommitLog} keeps it, as the database would: per message position
 * the end position of its transaction, for the messages the harvest finished whose transactions end after the
 * slot's confirmed position ({@code CommitLog.appendLedger}).
 *
 * <p>Thread-safe: guarded by the log's lock, which its caller holds.
 */
final class CommitLogLedger {
    /** Message position → end position; immutable, replaced on each append. Guarded by the log's lock. */
    private Map<Long, Long> ledger = Map.of();

    /** Adds {@code finished} and forgets the entries ending at or below {@code confirmed}. Caller holds the lock. */
    void append(Map<Long, Long> finished, long confirmed) {
        Map<Long, Long> kept = new TreeMap<>(ledger);
        kept.putAll(finished);
        kept.values().removeIf(end -> end <= confirmed);
        ledger = Map.copyOf(kept);
    }

    /** The ledger as last saved, empty before the first. Caller holds the lock. */
    Map<Long, Long> load() {
        return ledger;
    }
}
