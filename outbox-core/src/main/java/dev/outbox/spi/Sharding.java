package dev.outbox.spi;

/**
 * A {@link Store} capability: an outbox split into shards. A sharded outbox stores each row's shard,
 * {@link dev.outbox.OutboxShards#shardOf} of its key, and is harvested shard by shard, each shard by its own leader;
 * the {@code Dispatcher} runs one harvest per shard. A store without it is one shard, harvested whole.
 */
public interface Sharding {

    /**
     * How many shards this outbox is split into.
     *
     * @return the number of shards, at least 1
     */
    int shards();

    /**
     * One shard of this outbox as a store of its own, for the harvest that leads it. Its harvest and its
     * {@link Gauges} see only the shard's rows; it fences with an epoch of the shard's own ({@link StorageFencing}),
     * so that shards change leaders independently. {@link Store#purge}, {@link Store#retryLater} and
     * {@link Store#park} act on the ids given (ids are unique across the outbox). {@link Store#publisher()} and
     * {@link ParkedRecords} are the whole outbox's. {@link CommitSignals} may wake the shard for a commit to any
     * shard. A read passes over the ids of other shards as it passes over ids that never committed.
     *
     * <p>Cheap to call; the dispatcher takes each shard once.
     *
     * @param index the shard, from 0 to {@link #shards()} - 1
     * @return the shard's store
     * @throws IllegalArgumentException naming the index if it is out of range
     */
    Store shard(int index);

    /**
     * The number of shards of {@code store}: its {@link Sharding}'s, or 1.
     *
     * @param store the store
     * @return its number of shards
     */
    static int of(Store store) {
        return store.capability(Sharding.class).map(Sharding::shards).orElse(1);
    }
}
