package dev.outbox.testkit;

import dev.outbox.spi.Store;

import java.time.Clock;
import java.time.Duration;

/**
 * The {@link StreamStoreContract} against the test kit's own streamed store, the one the simulation runs: it must
 * behave as the Postgres WAL harvest does ({@code PostgresWalStoreContractTest} runs the same suite there).
 */
class InMemoryStreamStoreContractTest extends StreamStoreContract {
    private InMemoryCommitLog log;

    @Override
    protected Store createStore() {
        log = new InMemoryCommitLog(Clock.systemUTC());
        return new InMemoryStreamStore(log, "contract", Clock.systemUTC(), Duration.ofSeconds(1));
    }

    @Override
    protected TestTransaction begin(Store store) {
        return log.begin();
    }
}
