package dev.outbox.internal;

/**
 * What the harvest thread does next: a pure function of the leadership, the harvest's own progress and the
 * schedule's figures, taken together under the state's lock. The harvest thread ({@link HarvestLoop}) carries the
 * step out; this class decides and changes nothing, so its tests drive it step by step.
 *
 * <p>In order of precedence:
 * <ol>
 *   <li>a harvest under way whose epoch ended lets go of the store's harvest ({@link Step#STOP_HARVEST}), after
 *       letting what is in flight settle, up to the drain timeout, if leadership ended
 *       ({@link Step#AWAIT_DRAIN});</li>
 *   <li>not leading, or the lease lapsed and the leader thread has not fenced yet: wait
 *       ({@link Step#AWAIT_LEADERSHIP});</li>
 *   <li>a broker refused sends as fenced in this leadership and the store does not fence: stand down
 *       ({@link Step#BROKER_STAND_DOWN}); a refusal of an earlier leadership is forgotten
 *       ({@link Decision#clearStaleLoss()});</li>
 *   <li>a fencing store's epoch is taken once per leadership and again after a write was refused as fenced, before
 *       anything is read or sent ({@link Step#TAKE_EPOCH}, after a stand-down if it was lost in this
 *       leadership);</li>
 *   <li>{@code HOLD_KEY}: the held keys are read once per leadership before anything is read or sent, then every
 *       check interval ({@link Step#READ_HOLDS});</li>
 *   <li>records ready: send them ({@link Step#SEND});</li>
 *   <li>too little room for a read worth its cost: wait for acknowledgements ({@link Step#THROTTLED});</li>
 *   <li>else read or mark ({@link Step#READ}).</li>
 * </ol>
 */
final class HarvestDecision {
    private HarvestDecision() {
    }

    /** The harvest thread's next step. */
    enum Step {
        /** Leadership ended with records still settling: wait for them, up to the drain timeout. */
        AWAIT_DRAIN,
        /** The epoch the store was harvested in ended: let go of the store's harvest. */
        STOP_HARVEST,
        /** Not leading, or the lease lapsed: wait for the leader thread. */
        AWAIT_LEADERSHIP,
        /** A fenced broker refused sends: wait a backoff before sending again. */
        BROKER_STAND_DOWN,
        /** Take the database epoch (after a stand-down if {@link Decision#standDown()}). */
        TAKE_EPOCH,
        /** Read the store's parked keys. */
        READ_HOLDS,
        /** Send the ready records. */
        SEND,
        /** Wait until acknowledgements make room for a read, or a retry falls due. */
        THROTTLED,
        /** Read or mark rows. */
        READ
    }

    /**
     * The figures a decision is made from, read under the state's lock.
     *
     * @param leading         whether this instance leads
     * @param leaseValid      whether its lease holds
     * @param epoch           the engine's epoch now
     * @param leaderships     leaderships acquired so far
     * @param epochLost       whether a write or send was refused as fenced since the database epoch was taken
     * @param brokerFencedNow whether the last refusal by a fenced broker was in this leadership
     * @param underway        records in flight that wait for the broker (not for a refused write)
     * @param hasReady        whether records may be sent now
     * @param room            how many records may be read
     * @param worthReading    the least room worth a read
     * @param fencing         whether the store fences
     * @param holdKeys        whether parks hold their key ({@code HOLD_KEY})
     * @param progress        the harvest thread's own progress
     * @param drainTimedOut   whether the drain after leadership ended has taken the drain timeout
     * @param holdsDue        whether the held keys' check interval has passed
     */
    record Inputs(boolean leading, boolean leaseValid, long epoch, long leaderships, boolean epochLost,
                  boolean brokerFencedNow, int underway, boolean hasReady, int room, int worthReading, boolean fencing,
                  boolean holdKeys, Progress progress, boolean drainTimedOut, boolean holdsDue) {
    }

    /**
     * The harvest thread's own progress across steps (not guarded: that thread's alone).
     */
    static final class Progress {
        /** The epoch the store was last harvested in, or -1: the store's harvest is let go when that epoch ends. */
        long harvestEpoch = -1;
        /** When the loop saw the harvest's epoch end ({@code Long.MIN_VALUE}: not yet). */
        long harvestEndedAt = Long.MIN_VALUE;
        /** The leadership for which a fencing store's epoch was taken (0: none yet). */
        long epochTakenFor;
        /** The leadership in which a fenced broker last had the harvest stand down. */
        long brokerStoodDownFor;
        /** {@code HOLD_KEY}: the leadership for which the parked keys were read (0: none yet). */
        long holdsReadFor;
        /** When the parked keys were last read. */
        long lastHoldsRead;
        /** When the cursor harvest last rescanned from the head. */
        long lastRescan;
        /** Whether the last read returned as much as it asked for: a send may be followed by more. */
        boolean lastReadFull = true;

        boolean harvesting() {
            return harvestEpoch != -1;
        }
    }

    /**
     * A step, and whether a fenced broker's refusal raised in an earlier leadership is to be forgotten first.
     *
     * @param standDown for {@link Step#TAKE_EPOCH}: the epoch was lost in this leadership, so stand down first
     */
    record Decision(Step step, boolean clearStaleLoss, boolean standDown) {
        Decision(Step step) {
            this(step, false, false);
        }
    }

    static Decision decide(Inputs in) {
        Progress p = in.progress();
        if (p.harvesting() && (!in.leading() || in.epoch() != p.harvestEpoch)) {
            if (!in.leading() && in.underway() > 0 && !in.drainTimedOut()) {
                return new Decision(Step.AWAIT_DRAIN);
            }
            return new Decision(Step.STOP_HARVEST);
        }
        if (!in.leading() || !in.leaseValid()) {
            return new Decision(Step.AWAIT_LEADERSHIP);
        }
        boolean clearStale = false;
        if (!in.fencing() && in.epochLost()) {
            if (in.brokerFencedNow()) {
                return new Decision(Step.BROKER_STAND_DOWN);
            }
            clearStale = true; // raised in an earlier leadership: this one is new, nothing to wait for
        }
        if (in.fencing() && (p.epochTakenFor != in.leaderships() || in.epochLost())) {
            return new Decision(Step.TAKE_EPOCH, false, in.epochLost() && p.epochTakenFor == in.leaderships());
        }
        if (in.holdKeys() && (p.holdsReadFor != in.leaderships() || in.holdsDue())) {
            return new Decision(Step.READ_HOLDS, clearStale, false);
        }
        if (in.hasReady()) {
            return new Decision(Step.SEND, clearStale, false);
        }
        if (in.room() < in.worthReading()) {
            return new Decision(Step.THROTTLED, clearStale, false);
        }
        return new Decision(Step.READ, clearStale, false);
    }
}
