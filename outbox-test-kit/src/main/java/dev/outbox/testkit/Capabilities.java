package dev.outbox.testkit;

import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;

/**
 * A store's {@linkplain Store#capability capabilities} for tests, each failing with an error naming the store when
 * it lacks the capability: {@code marking(store).mark(leader, 10)}, {@code parkedRecords(store).replay(ids)}.
 */
public final class Capabilities {
    private Capabilities() {
    }

    /**
     * {@return the store's mark harvest}
     *
     * @param store the store
     */
    public static MarkHarvest marking(Store store) {
        return Store.require(store, MarkHarvest.class, "the test");
    }

    /**
     * {@return the store's cursor harvest}
     *
     * @param store the store
     */
    public static CursorHarvest reading(Store store) {
        return Store.require(store, CursorHarvest.class, "the test");
    }

    /**
     * {@return the store's commit signals}
     *
     * @param store the store
     */
    public static CommitSignals signals(Store store) {
        return Store.require(store, CommitSignals.class, "the test");
    }

    /**
     * {@return the store's storage fencing}
     *
     * @param store the store
     */
    public static StorageFencing fencing(Store store) {
        return Store.require(store, StorageFencing.class, "the test");
    }

    /**
     * {@return the store's shards}
     *
     * @param store the store
     */
    public static Sharding sharding(Store store) {
        return Store.require(store, Sharding.class, "the test");
    }

    /**
     * {@return the store's parked records}
     *
     * @param store the store
     */
    public static ParkedRecords parkedRecords(Store store) {
        return Store.require(store, ParkedRecords.class, "the test");
    }

    /**
     * {@return the store's parked keys}
     *
     * @param store the store
     */
    public static ParkedKeys parkedKeys(Store store) {
        return Store.require(store, ParkedKeys.class, "the test");
    }

    /**
     * {@return the store's gauges}
     *
     * @param store the store
     */
    public static Gauges gauges(Store store) {
        return Store.require(store, Gauges.class, "the test");
    }
}
