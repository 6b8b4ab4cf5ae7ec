package dev.outbox.internal;

import dev.outbox.internal.HarvestDecision.Decision;
import dev.outbox.internal.HarvestDecision.Inputs;
import dev.outbox.internal.HarvestDecision.Progress;
import dev.outbox.internal.HarvestDecision.Step;
import org.junit.jupiter.api.Test;

import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The harvest thread's decisions, driven step by step: a {@link Leadership} and the harvest's {@link Progress} are
 * moved as the engine moves them, and each turn's step is checked.
 */
class HarvestDecisionTest {
    private final Leadership leadership = new Leadership();
    private final Progress progress = new Progress();
    private boolean leaseValid = true;
    private int underway;
    private boolean hasReady;
    private int room = 100;
    private final int worthReading = 10;
    private boolean fencing;
    private boolean holdKeys;
    private boolean drainTimedOut;
    private boolean holdsDue;

    private Decision decide() {
        return HarvestDecision.decide(new Inputs(leadership.leading(), leaseValid, leadership.epoch(),
                leadership.leaderships(), leadership.epochLost(), leadership.brokerFencedNow(), underway, hasReady,
                room, worthReading, fencing, holdKeys, progress, drainTimedOut, holdsDue));
    }

    @Test
    void aStandbyWaitsForLeadership() {
        assertThat(decide().step()).isEqualTo(Step.AWAIT_LEADERSHIP);
    }

    @Test
    void aLeaderReadsThenSendsThenWaitsWhenThrottled() {
        leadership.acquired(UUID.randomUUID());
        assertThat(decide().step()).isEqualTo(Step.READ);
        progress.harvestEpoch = leadership.epoch();
        hasReady = true;
        assertThat(decide().step()).isEqualTo(Step.SEND);
        hasReady = false;
        room = worthReading - 1;
        assertThat(decide().step()).isEqualTo(Step.THROTTLED);
        room = worthReading;
        assertThat(decide().step()).isEqualTo(Step.READ);
    }

    @Test
    void aLapsedLeaseStopsEverythingUntilTheLeaderThreadActs() {
        leadership.acquired(UUID.randomUUID());
        hasReady = true;
        leaseValid = false;
        assertThat(decide().step()).isEqualTo(Step.AWAIT_LEADERSHIP);
    }

    @Test
    void leadershipEndingWithRecordsInFlightDrainsThenLetsTheStoreHarvestGo() {
        leadership.acquired(UUID.randomUUID());
        progress.harvestEpoch = leadership.epoch();
        leadership.stopped();
        underway = 3;
        assertThat(decide().step()).isEqualTo(Step.AWAIT_DRAIN);
        drainTimedOut = true;
        assertThat(decide().step()).isEqualTo(Step.STOP_HARVEST);
        drainTimedOut = false;
        underway = 0;
        assertThat(decide().step()).isEqualTo(Step.STOP_HARVEST);
        progress.harvestEpoch = -1;
        assertThat(decide().step()).isEqualTo(Step.AWAIT_LEADERSHIP);
    }

    @Test
    void aNewEpochWhileLeadingLetsTheStoreHarvestGoAtOnceEvenWithRecordsInFlight() {
        leadership.acquired(UUID.randomUUID());
        progress.harvestEpoch = leadership.epoch();
        leadership.refreshed(UUID.randomUUID());
        underway = 3;
        hasReady = true;
        assertThat(decide().step()).isEqualTo(Step.STOP_HARVEST);
    }

    @Test
    void aFencingStoreTakesItsEpochBeforeAnythingIsReadOrSentAndAgainAfterALossWithAStandDown() {
        fencing = true;
        leadership.acquired(UUID.randomUUID());
        hasReady = true;
        Decision first = decide();
        assertThat(first.step()).isEqualTo(Step.TAKE_EPOCH);
        assertThat(first.standDown()).isFalse();
        progress.epochTakenFor = leadership.leaderships();
        assertThat(decide().step()).isEqualTo(Step.SEND);
        leadership.lost(false);
        Decision again = decide();
        assertThat(again.step()).isEqualTo(Step.TAKE_EPOCH);
        assertThat(again.standDown()).isTrue();
        leadership.regained();
        assertThat(decide().step()).isEqualTo(Step.SEND);
        leadership.stopped();
        leadership.acquired(UUID.randomUUID());
        assertThat(decide().step()).as("a new leadership takes a new epoch").isEqualTo(Step.TAKE_EPOCH);
    }

    @Test
    void aFencedBrokerStandsDownInItsLeadershipOnlyWithAStoreThatDoesNotFence() {
        leadership.acquired(UUID.randomUUID());
        hasReady = true;
        leadership.lost(true);
        assertThat(decide().step()).isEqualTo(Step.BROKER_STAND_DOWN);
        leadership.stopped();
        leadership.acquired(UUID.randomUUID());
        Decision next = decide();
        assertThat(next.step()).isEqualTo(Step.SEND);
        assertThat(next.clearStaleLoss()).as("a refusal of an earlier leadership is forgotten").isTrue();
    }

    @Test
    void heldKeysAreReadOncePerLeadershipBeforeAnythingIsSentThenWhenDue() {
        holdKeys = true;
        leadership.acquired(UUID.randomUUID());
        hasReady = true;
        assertThat(decide().step()).isEqualTo(Step.READ_HOLDS);
        progress.holdsReadFor = leadership.leaderships();
        assertThat(decide().step()).isEqualTo(Step.SEND);
        holdsDue = true;
        assertThat(decide().step()).isEqualTo(Step.READ_HOLDS);
    }

    @Test
    void aFencingStoresEpochComesBeforeTheHeldKeys() {
        holdKeys = true;
        fencing = true;
        leadership.acquired(UUID.randomUUID());
        assertThat(decide().step()).isEqualTo(Step.TAKE_EPOCH);
        progress.epochTakenFor = leadership.leaderships();
        assertThat(decide().step()).isEqualTo(Step.READ_HOLDS);
    }
}
