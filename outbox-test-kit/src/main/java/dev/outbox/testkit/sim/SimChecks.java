package dev.outbox.testkit.sim;

import dev.outbox.DispatcherListener;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxShards;
import dev.outbox.ParkedRecord;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * The guarantees' checks of a {@link SimRun}: G1, G2 and G4 as a record reaches the broker, G3 as a dispatcher sends
 * (per shard with shards), the leadership the dispatchers' listeners report (what G3 checks against), and G1 and G6
 * at the end. Violations go to the run's trace. Used on the run's threads under the {@link SimScheduler}.
 */
final class SimChecks {
    private final SimRun run;
    private final SimulationConfig config;
    private final SimScheduler sched;

    SimChecks(SimRun run) {
        this.run = run;
        this.config = run.config;
        this.sched = run.sched;
    }

    /** {@code r} reaches the broker's log: G1 (not rolled back), G2 (its key's order) and G4 (no bare repeat). */
    void append(OutboxRecord r) {
        long id = run.wid(r);
        List<Long> seq = run.log.get(r.key());
        if (run.rolledBack.contains(id)) {
            run.violation("G1: #" + id + " was rolled back, yet it reached the broker");
        }
        if (!seq.isEmpty() && seq.get(seq.size() - 1) > id) {
            run.violation("G2: key " + r.key() + " went backwards: #" + id + " after " + seq);
        }
        if (run.eos == null && run.appended.contains(id)
                && faultsFor(r.key()) <= run.faultsAtFirstSend.getOrDefault(id, 0)) {
            run.violation("G4: #" + id + " reached the broker twice with no fault or change of leader while it"
                    + " was in flight");
        }
        seq.add(id);
        run.appended.add(id);
    }

    /** {@code name} sends {@code record}: G3 (unsharded), and what G4 needs. */
    void sending(String name, OutboxRecord record) {
        Integer mine = run.lastAcquired.get(name);
        for (Map.Entry<String, Integer> e : run.shardGroup != null ? Map.<String, Integer>of().entrySet()
                : run.lastAcquired.entrySet()) {
            if (!e.getKey().equals(name) && (mine == null || e.getValue() > mine)) {
                run.violation("G3: " + name + " sent #" + run.wid(record) + " after " + e.getKey()
                        + " acquired leadership");
            }
        }
        run.faultsAtFirstSend.putIfAbsent(run.wid(record), faultsFor(record.key()));
        run.event(name + ": sends #" + run.wid(record) + " (" + record.key()
                + (config.stream ? ", read as " + record.id() : "") + ")");
    }

    /**
     * G3 per shard: the record's shard was last acquired by this dispatcher, never by another one after it
     * (leadership is recorded per dispatcher and shard: "d0/s2").
     */
    void checkShardLeader(String name, OutboxRecord record) {
        int shard = OutboxShards.shardOf(record.key(), config.shards);
        String suffix = "/s" + shard;
        Integer mine = run.lastAcquired.get(name + suffix);
        if (mine == null) {
            run.violation("G3: " + name + " sent #" + run.wid(record) + " of shard " + shard + ", which it never led");
            return;
        }
        for (Map.Entry<String, Integer> e : run.lastAcquired.entrySet()) {
            if (e.getKey().endsWith(suffix) && !e.getKey().equals(name + suffix) && e.getValue() > mine) {
                run.violation("G3: " + name + " sent #" + run.wid(record) + " of shard " + shard + " after "
                        + e.getKey() + " acquired its leadership");
            }
        }
    }

    /** Dispatcher {@code name}'s listener: records the leadership it acquires (per shard) and traces the rest. */
    DispatcherListener listener(String name) {
        return new DispatcherListener() {
            @Override
            public void leaderAcquired(UUID leaderId) {
                if (run.shardGroup != null) {
                    String shard = shardOfWorker(name);
                    if (shard == null) {
                        run.violation(name + " acquired a shard's leadership off a shard's leader thread ("
                                + run.who() + ")");
                        return;
                    }
                    run.lastAcquired.put(name + "/s" + shard, ++run.acquisitions);
                    run.event(name + ": leader of shard " + shard + " acquired");
                    return;
                }
                run.lastAcquired.put(name, ++run.acquisitions);
                run.event(name + ": leader acquired");
            }

            @Override
            public void leaderRefreshed(UUID leaderId) {
                run.event(name + ": leader id refreshed" + ofShard(name));
            }

            @Override
            public void leaderRevoked() {
                run.event(name + ": leader revoked" + ofShard(name));
            }

            @Override
            public void leaderFenced() {
                run.event(name + ": leader fenced" + ofShard(name));
            }

            @Override
            public void recordParked(ParkedRecord record) {
                run.event(name + ": parks " + (config.stream ? "as parked #" : "#") + record.id() + " ("
                        + record.reason() + ")");
            }

            @Override
            public void failure(String operation, Throwable error) {
                run.event(name + ": " + operation + " failed: " + error.getMessage());
            }
        };
    }

    /**
     * The shard whose harvest the running worker belongs to ({@code d0-s2-leader}: "2"), or null. A sharded
     * dispatcher's one listener hears every shard; the shard's leader thread is the one that reports.
     */
    String shardOfWorker(String dispatcher) {
        String w = sched.currentWorker();
        String prefix = dispatcher + "-s";
        if (w == null || !w.startsWith(prefix)) {
            return null;
        }
        int end = w.indexOf('-', prefix.length());
        return end < 0 ? null : w.substring(prefix.length(), end);
    }

    String ofShard(String dispatcher) {
        if (run.shardGroup == null) {
            return "";
        }
        String shard = shardOfWorker(dispatcher);
        return shard == null ? "" : " (shard " + shard + ")";
    }

    /**
     * The faults that excuse a duplicate of a {@code key} record: every fault; with shards, the store's and the
     * broker's and those of the key's own shard's leadership, not a leadership change of another shard.
     */
    int faultsFor(String key) {
        return run.shardFaults == null ? run.faults
                : run.faults + run.shardFaults[OutboxShards.shardOf(key, config.shards)];
    }

    /** At the end of a run that broke nothing: G1 (every committed record delivered) and G6 (poison parked). */
    void checkEnd() {
        Set<Long> parkedIds = new TreeSet<>();
        if (config.stream) {
            parkedIds.addAll(run.commitLog.parkedWriterIds());
        } else {
            for (ParkedRecord p : run.store.parkedRows()) {
                parkedIds.add(p.id());
            }
        }
        for (long id : run.committed) {
            boolean poison = run.poisonId != null && id == run.poisonId;
            if (poison) {
                if (!parkedIds.contains(id)) {
                    run.violation("G6: poison #" + id + " was not parked");
                }
                if (run.appended.contains(id)) {
                    run.violation("G6: poison #" + id + " reached the broker");
                }
            } else if (!run.appended.contains(id)) {
                run.violation("G1: committed #" + id + " never reached the broker" + (parkedIds.contains(id)
                        ? " (it was parked)" : ""));
            }
        }
    }
}
