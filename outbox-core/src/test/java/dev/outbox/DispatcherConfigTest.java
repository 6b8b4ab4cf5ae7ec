package dev.outbox;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DispatcherConfigTest {

    @Test
    void defaultsFollowTheDocumentation() {
        DispatcherConfig c = DispatcherConfig.defaults();
        assertThat(c.markBatchSize()).isEqualTo(100);
        assertThat(c.maxInFlightRecords()).isEqualTo(1000);
        assertThat(c.pollInterval()).isEqualTo(Duration.ofMillis(100));
        assertThat(c.heartbeatTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.queueTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.markBackoff()).isEqualTo(Duration.ofMillis(10));
        assertThat(c.ioErrorBackoff()).isEqualTo(Duration.ofMillis(500));
        assertThat(c.metricsInterval()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.maxAttempts()).isEqualTo(10);
        assertThat(c.maxInFlightBytes()).as("an eighth of the heap")
                .isEqualTo(Runtime.getRuntime().maxMemory() / 8)
                .isEqualTo(DispatcherConfig.defaultMaxInFlightBytes());
    }

    @Test
    void settersRejectBadValuesByName() {
        assertThatThrownBy(() -> DispatcherConfig.builder().markBatchSize(0))
                .hasMessage("markBatchSize must be at least 1, was 0");
        assertThatThrownBy(() -> DispatcherConfig.builder().pollInterval(Duration.ofMillis(-1)))
                .hasMessage("pollInterval must be positive, was PT-0.001S");
        assertThatThrownBy(() -> DispatcherConfig.builder().drainTimeout(null)).hasMessage("drainTimeout");
        assertThatThrownBy(() -> DispatcherConfig.builder().maxInFlightBytes(0))
                .hasMessage("maxInFlightBytes must be at least 1 byte, was 0");
        assertThat(DispatcherConfig.builder().maxInFlightBytes(1).build().maxInFlightBytes())
                .as("smaller than any record: each goes alone").isEqualTo(1);
    }

    @Test
    void buildRejectsImpossibleCombinations() {
        assertThatThrownBy(() -> DispatcherConfig.builder().markBatchSize(500).maxInFlightRecords(100).build())
                .hasMessageContaining("markBatchSize (500) must not exceed maxInFlightRecords (100)");
        assertThatThrownBy(() -> DispatcherConfig.builder().heartbeatTimeout(Duration.ofMillis(200)).build())
                .hasMessageContaining("heartbeatTimeout (PT0.2S) must be at least 3 x pollInterval");
        assertThatThrownBy(() -> DispatcherConfig.builder().markBackoff(Duration.ofSeconds(1)).build())
                .hasMessageContaining("markBackoff (PT1S) must not exceed pollInterval");
        assertThatThrownBy(() -> DispatcherConfig.builder().ioErrorBackoff(Duration.ofMinutes(1)).build())
                .hasMessageContaining("ioErrorBackoff (PT1M) must not exceed maxIoErrorBackoff (PT10S)");
    }

    @Test
    void toBuilderRoundTrips() {
        DispatcherConfig c = DispatcherConfig.builder().maxAttempts(3).markBatchSize(7)
                .maxInFlightBytes(12_345).afterPark(DispatcherConfig.AfterPark.HOLD_KEY)
                .supersededParked(DispatcherConfig.SupersededParked.KEEP).build();
        assertThat(c.toBuilder().build().maxInFlightBytes()).isEqualTo(12_345);
        assertThat(c.toBuilder().build().afterPark()).isEqualTo(DispatcherConfig.AfterPark.HOLD_KEY);
        assertThat(c.toBuilder().build().supersededParked()).isEqualTo(DispatcherConfig.SupersededParked.KEEP);
        assertThat(c.toBuilder().build().toString()).isEqualTo(c.toString());
    }

    @Test
    void storeWritesAndDeliveriesRetryByPoliciesOfTheirOwnAndTheReadSizeIsApartFromTheMarkBatch() {
        DispatcherConfig followers = DispatcherConfig.builder().ioErrorBackoff(Duration.ofMillis(20))
                .maxIoErrorBackoff(Duration.ofSeconds(1)).markBatchSize(50).build();
        assertThat(followers.deliveryBackoff()).as("unset: as the store's").isEqualTo(Duration.ofMillis(20));
        assertThat(followers.maxDeliveryBackoff()).isEqualTo(Duration.ofSeconds(1));
        assertThat(followers.readBatchSize()).as("unset: the mark batch").isEqualTo(50);

        DispatcherConfig apart = followers.toBuilder().deliveryBackoff(Duration.ofSeconds(2))
                .maxDeliveryBackoff(Duration.ofMinutes(5)).readBatchSize(400).build();
        assertThat(apart.storeRetry().delay(1)).isEqualTo(Duration.ofMillis(20));
        assertThat(apart.storeRetry().delay(30)).isEqualTo(Duration.ofSeconds(1));
        assertThat(apart.deliveryRetry().delay(1)).isEqualTo(Duration.ofSeconds(2));
        assertThat(apart.deliveryRetry().delay(30)).isEqualTo(Duration.ofMinutes(5));
        assertThat(apart.readBatchSize()).isEqualTo(400);
        assertThat(apart.markBatchSize()).isEqualTo(50);

        assertThatThrownBy(() -> DispatcherConfig.builder().deliveryBackoff(Duration.ofMinutes(1)).build())
                .hasMessage("deliveryBackoff (PT1M) must not exceed maxDeliveryBackoff (PT10S)");
        assertThatThrownBy(() -> DispatcherConfig.builder().readBatchSize(2000).build())
                .hasMessage("readBatchSize (2000) must not exceed maxInFlightRecords (1000)");
        assertThatThrownBy(() -> DispatcherConfig.builder().readBatchSize(0))
                .hasMessage("readBatchSize must be at least 1, was 0");
    }
}
