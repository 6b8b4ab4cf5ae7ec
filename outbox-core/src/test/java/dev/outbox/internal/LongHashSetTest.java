package dev.outbox.internal;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class LongHashSetTest {

    @Test
    void behavesAsAHashSetOfLongsOverRandomOperations() {
        for (long seed = 1; seed <= 40; seed++) {
            Random random = new Random(seed);
            LongHashSet set = new LongHashSet();
            Set<Long> model = new HashSet<>();
            List<Long> known = new ArrayList<>();
            // Small ranges make collisions and long probe runs; the extremes include the free-slot marker.
            long range = 1 + random.nextInt(5_000);
            for (int op = 0; op < 20_000; op++) {
                long v = switch (random.nextInt(10)) {
                    case 0 -> Long.MIN_VALUE;
                    case 1 -> Long.MAX_VALUE;
                    case 2, 3 -> known.isEmpty() ? 0 : known.get(random.nextInt(known.size()));
                    default -> random.nextLong() % range;
                };
                int kind = random.nextInt(100);
                if (kind < 50) {
                    assertThat(set.add(v)).as("seed %d op %d add %d", seed, op, v).isEqualTo(model.add(v));
                    known.add(v);
                } else if (kind < 90) {
                    assertThat(set.remove(v)).as("seed %d op %d remove %d", seed, op, v).isEqualTo(model.remove(v));
                } else if (kind < 99) {
                    assertThat(set.contains(v)).as("seed %d op %d contains %d", seed, op, v)
                            .isEqualTo(model.contains(v));
                } else {
                    set.clear();
                    model.clear();
                }
                assertThat(set.size()).as("seed %d op %d size", seed, op).isEqualTo(model.size());
            }
            for (long v : known) {
                assertThat(set.contains(v)).as("seed %d final contains %d", seed, v).isEqualTo(model.contains(v));
            }
            assertThat(set.isEmpty()).isEqualTo(model.isEmpty());
        }
    }

    @Test
    void growsAndShrinksThroughManyConsecutiveIds() {
        LongHashSet set = new LongHashSet();
        for (long id = 1; id <= 100_000; id++) {
            assertThat(set.add(id)).isTrue();
        }
        assertThat(set.size()).isEqualTo(100_000);
        for (long id = 1; id <= 100_000; id += 2) {
            assertThat(set.remove(id)).isTrue();
        }
        for (long id = 1; id <= 100_000; id++) {
            assertThat(set.contains(id)).as("%d", id).isEqualTo(id % 2 == 0);
        }
        for (long id = 2; id <= 100_000; id += 2) {
            assertThat(set.remove(id)).isTrue();
        }
        assertThat(set.isEmpty()).isTrue();
        assertThat(set.contains(5)).isFalse();
    }
}
