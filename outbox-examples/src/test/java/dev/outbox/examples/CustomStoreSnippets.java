package dev.outbox.examples;

import dev.outbox.Publisher;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;

import java.time.Instant;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

/** The guide's "A custom Store" snippet, compiled and run by {@code CustomStoreSnippetsTest}. */
final class CustomStoreSnippets {
    private CustomStoreSnippets() {
    }

    // tag::decorator[]
    /**
     * A store that counts the rows the dispatcher purges. It implements the port and, since a fencing leader writes
     * through the store's fenced view, storage fencing too (so that the view counts as well); every other capability
     * of the real store reaches the dispatcher unchanged through {@link #capability}.
     */
    static final class CountingStore implements Store, StorageFencing {
        private final Store real;
        final LongAdder purged;

        CountingStore(Store real) {
            this(real, new LongAdder());
        }

        private CountingStore(Store real, LongAdder purged) {
            this.real = real;
            this.purged = purged;
        }

        @Override
        public Publisher publisher() {
            return real.publisher();
        }

        @Override
        public void purge(Collection<Long> ids) {
            real.purge(ids);
            purged.add(ids.size());
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
            real.retryLater(nextAttempts);
        }

        @Override
        public void park(Map<Long, String> reasons) {
            real.park(reasons);
        }

        @Override
        public long acquireEpoch() {
            return Store.require(real, StorageFencing.class, "fencing").acquireEpoch();
        }

        @Override
        public Store fencedBy(long epoch) {
            return new CountingStore(Store.require(real, StorageFencing.class, "fencing").fencedBy(epoch), purged);
        }

        @Override
        public <T> Optional<T> capability(Class<T> type) {
            if (type == StorageFencing.class) {
                return real.capability(type).map(theirs -> type.cast(this)); // fenced only if the real store fences
            }
            return real.capability(type);
        }
    }
    // end::decorator[]
}
