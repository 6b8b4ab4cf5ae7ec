package dev.outbox.testkit;

import dev.outbox.spi.Store;

import java.time.Clock;

class InMemoryStoreContractTest extends StoreContract {

    @Override
    protected Store createStore() {
        InMemoryStore store = new InMemoryStore();
        store.setFencing(true);
        return store;
    }

    @Override
    protected Store createStore(int maxKeyLength) {
        InMemoryStore store = new InMemoryStore(Clock.systemUTC(), maxKeyLength);
        store.setFencing(true);
        return store;
    }

    @Override
    protected void insertRow(Store store, String topic, String key, int attempts) {
        ((InMemoryStore) store).insertRow(topic, key, attempts);
    }

    @Override
    protected TestTransaction begin(Store store) {
        return ((InMemoryStore) store).begin();
    }

    @Override
    protected void insertMalformedRow(Store store, String topic, String key) {
        ((InMemoryStore) store).insertMalformed(topic, key, "header names and values differ in length: 2 != 1");
    }
}
