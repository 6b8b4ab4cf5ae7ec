package dev.outbox.broker.kafka;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Exactly-once publishing's memory, alone: what it skips. The case the simulation found
 * ({@code SimulationExactlyOnceTest}): a leader whose purge was refused stands down, forgets the records it had
 * committed, leads again with the same producer (no new progress read) and meets them again in the table — they are
 * acknowledged without a second send, until their purge is reported.
 */
class PublishedRecordsTest {
    private static final Function<OutboxRecord, OutboxRecord> SELF = r -> r;

    private static OutboxRecord record(long id, UUID messageId) {
        return new OutboxRecord(id, Instant.EPOCH, OutboxMessage.of("t", "k", "v" + id), 0, null, messageId);
    }

    @Test
    void whatThisProducerCommittedIsSkippedWhenMetAgainUntilItsPurgeIsReported() {
        PublishedRecords memory = new PublishedRecords();
        memory.recovered(Map.of());
        OutboxRecord a = record(6, UUID.randomUUID());
        OutboxRecord b = record(7, UUID.randomUUID());
        assertThat(memory.skipPublished(List.of(a, b), SELF, r -> { })).containsExactly(a, b);
        memory.committed(List.of(a, b), SELF);

        List<OutboxRecord> skipped = new ArrayList<>();
        assertThat(memory.skipPublished(List.of(a, b, record(8, UUID.randomUUID())), SELF, skipped::add))
                .extracting(OutboxRecord::id).containsExactly(8L);
        assertThat(skipped).containsExactly(a, b);

        memory.purged(List.of(6L));
        assertThat(memory.skipPublished(List.of(a, b), SELF, r -> { })).as("6 was purged: a replay of it is new")
                .containsExactly(a);
        assertThat(memory.size()).isEqualTo(1);
    }

    @Test
    void aRowNumberedAgainIsMatchedByItsMessageIdAndItsPurgeForgetsIt() {
        PublishedRecords memory = new PublishedRecords();
        memory.recovered(Map.of());
        UUID id = UUID.randomUUID();
        memory.committed(List.of(record(3, id)), SELF);
        OutboxRecord renumbered = record(41, id); // a WAL harvest numbers rows per leader
        List<OutboxRecord> skipped = new ArrayList<>();
        assertThat(memory.skipPublished(List.of(renumbered), SELF, skipped::add)).isEmpty();
        assertThat(skipped).containsExactly(renumbered);
        assertThat(memory.size()).as("one entry, under its new row id").isEqualTo(1);
        memory.purged(List.of(41L));
        assertThat(memory.size()).isZero();
        assertThat(memory.skipPublished(List.of(renumbered), SELF, r -> { })).containsExactly(renumbered);
    }

    @Test
    void aProducerCreatedAnewKeepsWhatThisProcessCommittedWhenTheListItReadsIsOlder() {
        PublishedRecords memory = new PublishedRecords();
        memory.recovered(Map.of());
        OutboxRecord mine = record(9, UUID.randomUUID());
        memory.committed(List.of(mine), SELF);
        UUID listedId = UUID.randomUUID();
        memory.recovered(Map.of(listedId, 4L)); // a stale list: it does not name #9 yet
        List<OutboxRecord> skipped = new ArrayList<>();
        assertThat(memory.skipPublished(List.of(mine, record(4, listedId), record(10, UUID.randomUUID())), SELF,
                skipped::add)).extracting(OutboxRecord::id).containsExactly(10L);
        assertThat(skipped).extracting(OutboxRecord::id).containsExactly(9L, 4L);
    }

    @Test
    void whatAnEarlierProducerListedIsSkippedOnce() {
        PublishedRecords memory = new PublishedRecords();
        UUID id = UUID.randomUUID();
        memory.recovered(Map.of(id, 5L));
        OutboxRecord r = record(5, id);
        assertThat(memory.skipPublished(List.of(r), SELF, x -> { })).isEmpty();
        memory.purged(List.of(5L));
        assertThat(memory.skipPublished(List.of(r), SELF, x -> { })).containsExactly(r);
    }
}
