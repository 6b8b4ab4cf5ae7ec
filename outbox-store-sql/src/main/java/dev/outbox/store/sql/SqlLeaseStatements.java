package dev.outbox.store.sql;

import java.util.List;
import java.util.Objects;

/**
 * One database's statements for leader election in the database, as data: a lease table with one row per lease (row
 * 1 for an unsharded outbox, {@code shard + 1} for a shard, as the leader table's epoch rows are numbered), whose
 * holder renews it and whose expiry is measured on the database's clock only — every comparison of an expiry with
 * "now" is made by the database, in the statement, so the instances' wall clocks never matter. Run by
 * {@link SqlLeaderTransport}; a store offers them through {@link SqlStore#leaseStatements()}. Immutable and
 * thread-safe.
 *
 * <p>The parameters, bound in this order: {@code addRow} the row id; {@code acquire} the holder (a text of 36
 * characters), the lease in microseconds, the row id; {@code renew} the lease in microseconds, the row id, the
 * holder; {@code release} the row id, the holder; {@code holder} the row id; {@code rows} how long, in microseconds, a
 * request holds after it was last made (on a live row, and on a row released for the holder that asked for it), then
 * the highest row id; {@code want} the wanting holder, the row id, the current holder, the wanting holder again, how
 * long a request holds in microseconds; {@code renewAll} the lease in microseconds, the holder; {@code withdraw} the
 * holder that asked. {@code acquire}, {@code renew}, {@code release} and {@code want} are single-row updates whose
 * update count says whether they took effect; {@code renewAll}'s says how many rows it renewed, {@code withdraw}'s how
 * many requests it withdrew.
 *
 * @param createTable the DDL that creates the lease table if it does not exist, and adds the columns a table of an
 *                    earlier layout lacks ({@code wanted_at}), in order; idempotent
 * @param addRow      inserts the row as free (no holder, expired now) unless it exists; idempotent, also when run by
 *                    two instances at once
 * @param acquire     takes the row for a holder if it is free or its lease expired, setting its expiry to now plus
 *                    the lease; changes nothing otherwise
 * @param renew       extends the row's lease to now plus the lease if the holder still holds it and it has not
 *                    expired; changes nothing otherwise
 * @param release     frees the row (no holder, expired now) if the holder still holds it
 * @param holder      the row's holder if its lease has not expired: one row with one column, or no row
 * @param rows        the rows from 1 to the given id, in id order: the id, the holder if its lease has not expired
 *                    (else null), and the holder that asked for the row if it asked within the given time
 *                    ({@code wanted_at}; else null: a request lapses unless its requester renews it, so that a member
 *                    that left stops counting as one)
 * @param want        marks an unexpired row as asked for by another holder, now ({@code wanted_at}), unless another
 *                    holder's request still holds; the same holder asking again renews its request; taking the row
 *                    clears the mark, releasing it keeps it (the row is then reserved for the holder that asked, until
 *                    its request lapses)
 * @param renewAll    extends every unexpired lease of the holder to now plus the lease
 * @param withdraw    clears the holder's requests ({@code wanted_by} and {@code wanted_at}) on every row, live or
 *                    released for it: a member that closes stops counting as one at once, not a lease later
 */
public record SqlLeaseStatements(List<String> createTable, String addRow, String acquire, String renew,
                                 String release, String holder, String rows, String want, String renewAll,
                                 String withdraw) {

    /**
     * Checks and copies the components; see the record's description for each.
     *
     * @param createTable the lease table's DDL; not null, at least one statement
     * @param addRow      the insertion of a free row; not null
     * @param acquire     the conditional take-over; not null
     * @param renew       the conditional renewal; not null
     * @param release     the release; not null
     * @param holder      the live holder's query; not null
     * @param rows        the rows' query; not null
     * @param want        the request for a row; not null
     * @param renewAll    the renewal of all of a holder's rows; not null
     * @param withdraw    the withdrawal of a holder's requests; not null
     * @throws NullPointerException     if a component is null
     * @throws IllegalArgumentException if {@code createTable} is empty
     */
    public SqlLeaseStatements {
        createTable = List.copyOf(createTable);
        if (createTable.isEmpty()) {
            throw new IllegalArgumentException("createTable needs at least one statement");
        }
        Objects.requireNonNull(addRow, "addRow must not be null");
        Objects.requireNonNull(acquire, "acquire must not be null");
        Objects.requireNonNull(renew, "renew must not be null");
        Objects.requireNonNull(release, "release must not be null");
        Objects.requireNonNull(holder, "holder must not be null");
        Objects.requireNonNull(rows, "rows must not be null");
        Objects.requireNonNull(want, "want must not be null");
        Objects.requireNonNull(renewAll, "renewAll must not be null");
        Objects.requireNonNull(withdraw, "withdraw must not be null");
    }
}
