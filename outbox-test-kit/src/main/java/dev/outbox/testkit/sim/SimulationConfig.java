package dev.outbox.testkit.sim;

import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxShards;
import dev.outbox.testkit.InMemoryCommitLog;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.InMemoryStreamStore;
import dev.outbox.testkit.StoreFaults;

import java.time.Duration;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * A configuration of the deterministic {@link Simulation}: the records, the dispatchers, the harvest, the fault
 * budgets, the planted bugs and the timings; built by a {@link SimulationBuilder} (from
 * {@link Simulation#builder()}). Immutable.
 */
public final class SimulationConfig {
    final int keys;
    final int recordsPerKey;
    final int dispatchers;
    final int sendFailures;
    final int duplicateAcks;
    final int storeErrors;
    final int leaderChanges;
    final int rollbacks;
    final boolean poison;
    final int lateCommits;
    final Duration lateCommitFor;
    final boolean pauseInsideSend;
    final boolean storageFencing;
    final boolean stream;
    final Duration takeoverTimeout;
    final boolean confirmOnRead;
    final boolean lostConfirmations;
    final int shards;
    final int rebalances;
    final int joins;
    final boolean forgetShardFilter;
    final boolean grantBeforeDrain;
    final boolean databaseElection;
    final boolean renewalAfterLapse;
    final Set<StoreFaults.Operation> storeErrorOps;
    final Set<PlantedBug> bugs;
    final boolean exactlyOnce;
    final Set<ProgressBug> progressBugs;
    final DispatcherConfig engine;
    final Duration deliveryTimeout;
    final Duration sessionTimeout;
    final Duration idleStep;
    final Duration timeLimit;
    final Duration settle;
    final long maxChoices;
    final long seed;

    SimulationConfig(SimulationBuilder b) {
        keys = b.keys;
        recordsPerKey = b.recordsPerKey;
        dispatchers = b.dispatchers;
        sendFailures = b.sendFailures;
        duplicateAcks = b.duplicateAcks;
        storeErrors = b.storeErrors;
        leaderChanges = b.leaderChanges;
        rollbacks = b.rollbacks;
        poison = b.poison;
        pauseInsideSend = b.pauseInsideSend;
        storageFencing = b.storageFencing;
        stream = b.stream;
        takeoverTimeout = b.takeoverTimeout;
        confirmOnRead = b.confirmOnRead;
        lostConfirmations = b.lostConfirmations;
        shards = b.shards;
        rebalances = b.rebalances;
        joins = b.joins;
        forgetShardFilter = b.forgetShardFilter;
        grantBeforeDrain = b.grantBeforeDrain;
        databaseElection = b.databaseElection;
        renewalAfterLapse = b.renewalAfterLapse;
        lateCommits = b.lateCommits;
        lateCommitFor = b.lateCommitFor;
        storeErrorOps = Collections.unmodifiableSet(EnumSet.copyOf(b.storeErrorOps));
        bugs = Collections.unmodifiableSet(b.bugs.isEmpty() ? EnumSet.noneOf(PlantedBug.class)
                : EnumSet.copyOf(b.bugs));
        exactlyOnce = b.exactlyOnce;
        progressBugs = Collections.unmodifiableSet(EnumSet.copyOf(b.progressBugs));
        engine = b.engine.build();
        deliveryTimeout = b.deliveryTimeout;
        sessionTimeout = b.sessionTimeout;
        idleStep = b.idleStep;
        timeLimit = b.timeLimit;
        settle = b.settle;
        maxChoices = b.maxChoices;
        seed = b.seed;
        if (engine.heartbeatTimeout().compareTo(sessionTimeout) >= 0
                || deliveryTimeout.compareTo(sessionTimeout) >= 0
                || deliveryTimeout.compareTo(engine.drainTimeout()) >= 0) {
            throw new IllegalArgumentException("the simulation assumes deliveryTimeout < drainTimeout and"
                    + " deliveryTimeout, heartbeatTimeout < sessionTimeout: " + this);
        }
    }

    @Override
    public String toString() {
        return keys + " keys x " + recordsPerKey + " records, " + dispatchers + " dispatchers ("
                + (stream ? "STREAM" : engine.harvest()) + ")"
                + (databaseElection ? ", leader election in the database" : "")
                + (shards > 1 ? ", " + shards + " shards, " + rebalances + " rebalance(s) (" + joins
                        + " may join)" : "")
                + ", faults: " + sendFailures + " send failure(s), " + duplicateAcks
                + " lost ack(s), " + storeErrors + " store error(s), " + leaderChanges + " leader change(s), "
                + rollbacks + " rollback(s)" + (poison ? ", a poison record" : "")
                + (lateCommits > 0 ? ", " + lateCommits + " late commit(s)" : "")
                + (pauseInsideSend ? ", pauses inside a send" : "")
                + (storageFencing ? ", storage fencing" : "")
                + (stream && !takeoverTimeout.equals(SimulationBuilder.DEFAULT_TAKEOVER)
                        ? ", takeover after " + takeoverTimeout.toMillis() + " ms" : "")
                + (exactlyOnce ? ", exactly-once" : "") + (bugs.isEmpty() ? "" : ", planted: " + bugs)
                + (progressBugs.isEmpty() ? "" : ", planted: " + progressBugs)
                + (lostConfirmations ? ", a lost stream may lose its unsent confirmation" : "")
                + (confirmOnRead ? ", planted: the stream confirmed on read" : "")
                + (forgetShardFilter ? ", planted: shard views forget their shard" : "")
                + (grantBeforeDrain ? ", planted: a revoked shard is granted before its drain" : "")
                + (renewalAfterLapse ? ", planted: a lease renewed after it lapsed" : "");
    }
}
