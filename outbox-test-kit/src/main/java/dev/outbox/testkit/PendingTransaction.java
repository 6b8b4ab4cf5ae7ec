package dev.outbox.testkit;

import dev.outbox.OutboxMessage;

import java.util.ArrayList;
import java.util.List;

/**
 * The state of one {@link InMemoryStore.Transaction}: the rows it wrote, pending until it commits, and its ordinal
 * in the store's {@link InMemoryRows}, taken with its first id. Not thread-safe, like a connection; the store's
 * lock guards the ordinals and ids it takes.
 */
final class PendingTransaction {
    private final Object lock;
    private final InMemoryRows table;
    /** Wakes the store's commit watchers after a commit. */
    private final Runnable committed;
    private final List<StoredRow> pending = new ArrayList<>();
    private boolean ended;
    /** This transaction's ordinal, taken before its first id; 0 until then. */
    private long xid;

    PendingTransaction(Object lock, InMemoryRows table, Runnable committed) {
        this.lock = lock;
        this.table = table;
        this.committed = committed;
    }

    long write(OutboxMessage message) {
        checkOpen("publish");
        table.validate(java.util.Collections.singletonList(message));
        long id;
        synchronized (lock) {
            if (xid == 0) {
                xid = table.openXid();
            }
            id = table.nextId();
        }
        pending.add(table.pending(id, message));
        return id;
    }

    void publish(List<OutboxMessage> messages) {
        checkOpen("publish");
        for (OutboxMessage m : table.validate(messages)) {
            write(m);
        }
    }

    List<Long> ids() {
        List<Long> ids = new ArrayList<>(pending.size());
        for (StoredRow row : pending) {
            ids.add(row.id);
        }
        return ids;
    }

    void commit() {
        checkOpen("commit");
        ended = true;
        table.commit(pending, xid);
        committed.run();
    }

    void rollback() {
        checkOpen("rollback");
        ended = true;
        pending.clear();
        table.rollback(xid);
    }

    void close() {
        if (!ended) {
            rollback();
        }
    }

    private void checkOpen(String operation) {
        if (ended) {
            throw new IllegalStateException("cannot " + operation + ": the transaction has ended");
        }
    }
}
