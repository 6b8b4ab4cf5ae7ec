package dev.outbox.testkit;

import dev.outbox.spi.Store;

class InMemoryStoreContractTest extends StoreContract {

    @Override
    protected Store createStore() {
        return new InMemoryStore();
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
