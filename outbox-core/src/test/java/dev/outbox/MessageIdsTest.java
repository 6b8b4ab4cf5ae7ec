package dev.outbox;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MessageIdsTest {

    @Test
    void idsAreVersion7WithTheCurrentTimeAndStrictlyIncreasing() {
        long before = System.currentTimeMillis();
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) { // more than 4,096 per millisecond carries into the time field
            ids.add(MessageIds.next());
        }
        long after = System.currentTimeMillis();
        Set<UUID> distinct = new HashSet<>(ids);
        assertThat(distinct).hasSize(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            UUID id = ids.get(i);
            assertThat(id.version()).isEqualTo(7);
            assertThat(id.variant()).isEqualTo(2);
            if (i > 0) {
                assertThat(id.compareTo(ids.get(i - 1))).as("id %d after id %d", i, i - 1).isPositive();
            }
        }
        assertThat(MessageIds.unixMillis(ids.get(0))).isBetween(before, after + 10_000 / 4096 + 1);
        assertThat(ids.get(0).toString()).as("text form sorts like the ids")
                .isLessThan(ids.get(ids.size() - 1).toString());
    }

    @Test
    void headerValuesRoundTripAndForeignValuesAreHashedStably() {
        UUID id = MessageIds.next();
        assertThat(MessageIds.fromHeader(MessageIds.toHeader(id))).isEqualTo(id);
        assertThat(MessageIds.fromHeader(id.toString().toUpperCase().getBytes(StandardCharsets.US_ASCII)))
                .as("UUID text is case-insensitive").isEqualTo(id);
        byte[] foreign = "order-17-created".getBytes(StandardCharsets.UTF_8);
        assertThat(MessageIds.fromHeader(foreign)).isEqualTo(MessageIds.fromHeader(foreign.clone()))
                .isEqualTo(UUID.nameUUIDFromBytes(foreign));
        assertThatThrownBy(() -> MessageIds.fromHeader(new byte[0])).isInstanceOf(IllegalArgumentException.class);
        assertThat(MessageIds.unixMillis(UUID.randomUUID())).isEqualTo(-1);
    }
}
