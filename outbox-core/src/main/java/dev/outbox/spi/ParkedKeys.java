package dev.outbox.spi;

import java.util.Set;

/**
 * A {@link Store} capability that {@code DispatcherConfig.AfterPark.HOLD_KEY} needs: the distinct keys of the parked
 * rows, and a {@link ParkedRecords#replay} that moves a replayed key's later outbox rows behind the replayed rows.
 */
public interface ParkedKeys {

    /**
     * The distinct keys of the rows in the parked area, of the whole outbox (a {@linkplain Sharding#shard shard}
     * answers for the whole outbox too). A dispatcher with {@code HOLD_KEY} holds these keys: it reads them when it
     * becomes leader and again every second while it leads, so what it holds is always derived from the table,
     * never from memory alone. One query; the parked area is expected to be small.
     *
     * @return the parked keys
     */
    Set<String> parkedKeys();
}
