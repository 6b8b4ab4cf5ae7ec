package dev.outbox.spi;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SqlStoreSettingsTest {

    @Test
    void statementTimeoutIsBoundedAndNamedWhenBad() {
        assertThat(SqlStoreSettings.statementTimeout(Duration.ofSeconds(30))).isEqualTo(Duration.ofSeconds(30));
        assertThatThrownBy(() -> SqlStoreSettings.statementTimeout(null))
                .hasMessage("statementTimeout must not be null");
        assertThatThrownBy(() -> SqlStoreSettings.statementTimeout(Duration.ZERO))
                .hasMessage("statementTimeout must be at least 1 ms: PT0S");
        assertThatThrownBy(() -> SqlStoreSettings.statementTimeout(Duration.ofDays(30)))
                .hasMessageStartingWith("statementTimeout must be at most").hasMessageEndingWith(": PT720H");
    }

    @Test
    void maxKeyLengthMustBePositive() {
        assertThat(SqlStoreSettings.maxKeyLength(1)).isEqualTo(1);
        assertThatThrownBy(() -> SqlStoreSettings.maxKeyLength(0)).hasMessage("maxKeyLength must be at least 1: 0");
    }
}
