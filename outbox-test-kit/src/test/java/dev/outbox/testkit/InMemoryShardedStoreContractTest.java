package dev.outbox.testkit;

import dev.outbox.spi.Store;

/** The sharded store contract against the reference implementation. */
class InMemoryShardedStoreContractTest extends ShardedStoreContract {

    @Override
    protected Store createStore(int shards) {
        InMemoryStore store = new InMemoryStore();
        store.setFencing(true);
        store.setShards(shards);
        return store;
    }

    @Override
    protected TestTransaction begin(Store store) {
        return ((InMemoryStore) store).begin();
    }
}
