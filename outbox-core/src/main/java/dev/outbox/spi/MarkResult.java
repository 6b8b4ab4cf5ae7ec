package dev.outbox.spi;

import dev.outbox.OutboxRecord;

import java.util.List;

/**
 * What one {@link MarkHarvest#mark} returned.
 *
 * @param records  the marked rows that could be read as messages, sorted by ascending id
 * @param rejected marked rows that could not be read as a message (written by hand with inconsistent
 *                 columns, an invalid topic, …); the dispatcher parks them at once, with their reason
 */
public record MarkResult(List<OutboxRecord> records, List<Rejected> rejected) {

    /**
     * Checks and copies the lists.
     *
     * @param records  the readable rows, sorted by ascending id, no duplicate; not null, no null element
     * @param rejected the rejected rows; not null, no null element
     * @throws NullPointerException     if a list is null or holds null
     * @throws IllegalArgumentException if {@code records} is not sorted by strictly ascending id
     */
    public MarkResult {
        records = List.copyOf(records);
        rejected = List.copyOf(rejected);
        for (int i = 1; i < records.size(); i++) {
            if (records.get(i - 1).id() >= records.get(i).id()) {
                throw new IllegalArgumentException("marked records must be sorted by ascending id, found "
                        + records.get(i - 1).id() + " before " + records.get(i).id());
            }
        }
    }

    /**
     * A result with only readable records.
     *
     * @param records the records, sorted by ascending id
     * @return the result, with no rejected row
     * @throws IllegalArgumentException if {@code records} is not sorted by strictly ascending id
     */
    public static MarkResult of(List<OutboxRecord> records) {
        return new MarkResult(records, List.of());
    }

    /**
     * Whether nothing was marked.
     *
     * @return true if there is neither a record nor a rejected row
     */
    public boolean isEmpty() {
        return records.isEmpty() && rejected.isEmpty();
    }

    /**
     * Number of rows marked, readable or not.
     *
     * @return the count, 0 or more
     */

    public int size() {
        return records.size() + rejected.size();
    }

    /**
     * A marked row that is not a valid message.
     *
     * @param id     its id
     * @param topic  its topic as stored, may be null
     * @param key    its key as stored, may be null
     * @param attempts its attempts as stored, or 0 where the stored value is negative
     * @param reason why it cannot be read, naming the bad value
     */
    public record Rejected(long id, String topic, String key, int attempts, String reason) implements MarkedRow {
    }
}
