package dev.outbox.store.h2;

import dev.outbox.spi.ReadResult;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What only the H2 store does: its late-commit rule, and what it refuses. On a real embedded H2. */
class H2StoreTest {
    private static JdbcDataSource database(String name) {
        JdbcDataSource dataSource = new JdbcDataSource();
        dataSource.setURL("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1");
        dataSource.setUser("sa");
        return dataSource;
    }

    @Test
    void aReadRechecksAGapForTheLateCommitWindow() {
        H2Store store = H2Store.builder(database("h2_window")).lateCommitWindow(Duration.ofSeconds(5)).build();
        store.createSchema();

        ReadResult read = store.read(0, List.of(), 10);

        assertThat(store.lateCommitWindow()).isEqualTo(Duration.ofSeconds(5));
        assertThat(read.gapToken() - read.horizon()).as("token = time after the read + window, horizon = before")
                .isGreaterThanOrEqualTo(5_000).isLessThan(65_000);
        assertThatThrownBy(() -> H2Store.builder(database("h2_window_bad")).lateCommitWindow(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
    }

    @Test
    void itHasOneShard() {
        assertThatThrownBy(() -> H2Store.builder(database("h2_sharded")).shards(2).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("shards(2)");
        H2Store store = H2Store.builder(database("h2_one_shard")).build();
        assertThat(store.shard(0)).isSameAs(store);
        assertThatThrownBy(() -> store.reshardSql(2)).isInstanceOf(UnsupportedOperationException.class);
    }
}
