package dev.outbox.spi;

import dev.outbox.OutboxRecord;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * What a store read from one marked row: either a {@link Readable} record for the broker, or a
 * {@link MarkResult.Rejected} row that is not a valid message and goes to the parked table. {@link RowChecks#check}
 * decides which, the same way for every store. Immutable and thread-safe.
 */
public sealed interface MarkedRow permits MarkedRow.Readable, MarkResult.Rejected {

    /**
     * The row's id.
     *
     * @return the id
     */
    long id();

    /**
     * A marked row that is a valid message.
     *
     * @param record the record to hand to the broker
     */
    record Readable(OutboxRecord record) implements MarkedRow {
        @Override
        public long id() {
            return record.id();
        }
    }

    /**
     * The {@link MarkResult} of {@code rows}, in any order: records and rejected rows, each sorted by id.
     *
     * @param rows the rows; not null, no null element
     * @return the result
     */

    static MarkResult result(Collection<? extends MarkedRow> rows) {
        List<OutboxRecord> records = new ArrayList<>(rows.size());
        List<MarkResult.Rejected> rejected = new ArrayList<>();
        for (MarkedRow row : rows) {
            if (row instanceof Readable readable) {
                records.add(readable.record());
            } else {
                rejected.add((MarkResult.Rejected) row);
            }
        }
        records.sort(Comparator.comparingLong(OutboxRecord::id));
        rejected.sort(Comparator.comparingLong(MarkResult.Rejected::id));
        return new MarkResult(records, rejected);
    }
}
