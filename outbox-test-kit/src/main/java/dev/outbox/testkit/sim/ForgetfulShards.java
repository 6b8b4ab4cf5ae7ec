package dev.outbox.testkit.sim;

import dev.outbox.spi.Store;

/** A sharding bug the simulation plants in the store, not in the engine. Test tooling, not API; stateless. */
final class ForgetfulShards {
    private ForgetfulShards() {
    }

    /**
     * The planted bug {@link SimulationBuilder#plantForgottenShardFilter()}: {@code store} as a sharded store whose
     * shard views forgot their shard, each one the whole store (every shard's rows, the outbox's one epoch).
     */
    static Store of(Store store) {
        dev.outbox.spi.Sharding forgetful = new dev.outbox.spi.Sharding() {
            @Override
            public int shards() {
                return dev.outbox.spi.Sharding.of(store);
            }

            @Override
            public Store shard(int index) {
                return store;
            }
        };
        return new Store() {
            @Override
            public dev.outbox.Publisher publisher() {
                return store.publisher();
            }

            @Override
            public void purge(java.util.Collection<Long> ids) {
                store.purge(ids);
            }

            @Override
            public void retryLater(java.util.Map<Long, java.time.Instant> nextAttempts) {
                store.retryLater(nextAttempts);
            }

            @Override
            public void park(java.util.Map<Long, String> reasons) {
                store.park(reasons);
            }

            @Override
            public <T> java.util.Optional<T> capability(Class<T> type) {
                return type == dev.outbox.spi.Sharding.class ? java.util.Optional.of(type.cast(forgetful))
                        : store.capability(type);
            }

            @Override
            public String toString() {
                return store + " (its shards forget their filter)";
            }
        };
    }
}
