package dev.outbox.testkit.sim;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * One member's balancing decision over the shard leases, {@code outbox-store-sql}'s {@code SqlShardBalance} line for
 * line over {@link SimLeaseTable.LeaseRow}s (kept in step by hand; see {@link SimLeaseTransport}): the live members
 * are the holders of unexpired leases, the members whose request for a lease still holds (it lapses a lease after its
 * requester last made it), and this member;
 * with <i>w</i> of them the share is ⌊<i>N</i>/<i>w</i>⌋ to ⌈<i>N</i>/<i>w</i>⌉ of the <i>N</i> shards. Immutable.
 *
 * @param mine     the shards this member's unexpired leases hold
 * @param give     the shards others asked for that this member holds beyond ⌊N/w⌋: to drain, then release
 * @param reserved free shards released for this member (it asked for them): to take whatever its share
 * @param free     free or expired shards nobody reserved: to take while it holds fewer than ⌈N/w⌉
 * @param room     how many of {@code free} it may take
 * @param ask      the shard to ask its busiest holder for, or its pending request to renew while still short; if any
 */
record SimShardBalance(Set<Integer> mine, Set<Integer> give, List<Integer> reserved, List<Integer> free, int room,
                       Optional<Ask> ask) {

    /** A request for {@code shard}, held by {@code holder}. */
    record Ask(int shard, String holder) {
    }

    /** The decision of the member holding {@code token}, from {@code rows} (row {@code shard + 1} for each shard). */
    static SimShardBalance decide(List<SimLeaseTable.LeaseRow> rows, String token, int shards) {
        Map<String, List<Integer>> holders = new HashMap<>();
        holders.put(token, new ArrayList<>());
        List<Integer> reserved = new ArrayList<>();
        List<Integer> free = new ArrayList<>();
        boolean asking = false;
        Optional<Ask> pending = Optional.empty();
        for (SimLeaseTable.LeaseRow row : rows) {
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
                holders.computeIfAbsent(row.wantedBy(), h -> new ArrayList<>());
            }
            asking |= token.equals(row.wantedBy());
        }
        int members = holders.size();
        int floor = shards / members;
        int ceil = floor + (shards % members == 0 ? 0 : 1);
        Set<Integer> mine = new TreeSet<>(holders.get(token));

        Set<Integer> give = new TreeSet<>();
        for (SimLeaseTable.LeaseRow row : rows) {
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
            // Ties between equally busy holders go to the first by token: the SQL code's HashMap order, made
            // deterministic so that a run replays.
            ask = holders.entrySet().stream().filter(e -> !e.getKey().equals(token))
                    .max(Comparator.comparingInt((Map.Entry<String, List<Integer>> e) -> e.getValue().size())
                            .thenComparing(Map.Entry::getKey, Comparator.reverseOrder()))
                    .filter(e -> e.getValue().size() - keep >= 2)
                    .map(e -> new Ask(e.getValue().get(e.getValue().size() - 1), e.getKey()));
        }
        return new SimShardBalance(sorted(mine), sorted(give), List.copyOf(reserved), List.copyOf(free), room, ask);
    }

    /** An immutable copy that iterates in order (a {@code Set.copyOf} does not, and a run must replay). */
    static Set<Integer> sorted(java.util.Collection<Integer> shards) {
        return java.util.Collections.unmodifiableSet(new TreeSet<>(shards));
    }
}
