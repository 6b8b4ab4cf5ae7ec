package dev.outbox.store.sql;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * One member's balancing decision over the shard leases, as pure logic (no I/O, no clock): from the lease rows it
 * just read, what it holds, what it gives up, what it may take and whom it asks — the lease taking of
 * {@link SqlShardedLeaderTransport}'s class description. The live members are the holders of unexpired leases, the
 * members whose request for a lease still holds (a request lapses a lease after its requester last made it, so a
 * member that left stops counting), and this member; with <i>w</i> of them the share is
 * ⌊<i>N</i>/<i>w</i>⌋ to ⌈<i>N</i>/<i>w</i>⌉ of the <i>N</i> shards. Immutable.
 *
 * @param mine     the shards this member's unexpired leases hold
 * @param give     the shards others asked for that this member holds beyond ⌊N/w⌋: to drain, then release
 * @param reserved free shards released for this member (it asked for them): to take whatever its share
 * @param free     free or expired shards nobody reserved: to take while it holds fewer than ⌈N/w⌉
 * @param room     how many of {@code free} it may take: ⌈N/w⌉ less what it keeps and the reserved ones
 * @param ask      the shard to ask its busiest holder for, if this member holds fewer than ⌊N/w⌋, nothing is free,
 *                 it asked for nothing yet, and that holder holds at least two more than it; or, while it is still
 *                 that short, the request it made and that is still pending, to renew it
 */
record SqlShardBalance(Set<Integer> mine, Set<Integer> give, List<Integer> reserved, List<Integer> free, int room,
                       Optional<Ask> ask) {

    /**
     * A request for one shard.
     *
     * @param shard  the shard
     * @param holder its current holder
     */
    record Ask(int shard, String holder) {
    }

    /** The decision of the member holding {@code token}, from {@code rows} (row {@code shard + 1} for each shard). */
    static SqlShardBalance decide(List<SqlLease.Row> rows, String token, int shards) {
        Map<String, List<Integer>> holders = new HashMap<>();
        holders.put(token, new ArrayList<>());
        List<Integer> reserved = new ArrayList<>();
        List<Integer> free = new ArrayList<>();
        boolean asking = false;
        Optional<Ask> pending = Optional.empty();
        for (SqlLease.Row row : rows) {
            int shard = row.id() - 1;
            if (row.holder() != null) {
                holders.computeIfAbsent(row.holder(), h -> new ArrayList<>()).add(shard);
                if (token.equals(row.wantedBy()) && !token.equals(row.holder())) {
                    pending = Optional.of(new Ask(shard, row.holder()));
                }
            } else if (token.equals(row.wantedBy())) {
                reserved.add(shard);
            } else if (row.wantedBy() == null) {
                free.add(shard);
            }
            if (row.wantedBy() != null) {
                holders.computeIfAbsent(row.wantedBy(), h -> new ArrayList<>()); // a member that holds nothing yet
            }
            asking |= token.equals(row.wantedBy());
        }
        int members = holders.size();
        int floor = shards / members;
        int ceil = floor + (shards % members == 0 ? 0 : 1);
        Set<Integer> mine = new TreeSet<>(holders.get(token));

        Set<Integer> give = new TreeSet<>();
        for (SqlLease.Row row : rows) {
            if (token.equals(row.holder()) && row.wantedBy() != null && !token.equals(row.wantedBy())
                    && mine.size() - give.size() > floor) {
                give.add(row.id() - 1);
            }
        }
        int keep = mine.size() - give.size();
        int room = Math.max(0, ceil - keep - reserved.size());

        Optional<Ask> ask = Optional.empty();
        if (keep < floor && reserved.isEmpty() && free.isEmpty() && pending.isPresent()) {
            ask = pending; // still short: renew the request, which lapses unless its requester renews it
        } else if (!asking && keep < floor && reserved.isEmpty() && free.isEmpty()) {
            ask = holders.entrySet().stream().filter(e -> !e.getKey().equals(token))
                    .max(Comparator.comparingInt(e -> e.getValue().size()))
                    .filter(e -> e.getValue().size() - keep >= 2)
                    .map(e -> new Ask(e.getValue().get(e.getValue().size() - 1), e.getKey()));
        }
        return new SqlShardBalance(Set.copyOf(mine), Set.copyOf(give), List.copyOf(reserved), List.copyOf(free), room,
                ask);
    }
}
