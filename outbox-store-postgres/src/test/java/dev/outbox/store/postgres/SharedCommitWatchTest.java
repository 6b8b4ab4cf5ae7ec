package dev.outbox.store.postgres;

import dev.outbox.spi.CommitSignals;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** The sharing logic alone, over a recording watch; the real listener is tested in PostgresCommitNotificationTest. */
class SharedCommitWatchTest {

    /** What the shared watch was told, in order. */
    private static final class Recording implements CommitSignals.CommitWatch {
        final List<String> calls = new ArrayList<>();
        Runnable wakeUp;

        @Override
        public boolean listening() {
            return true;
        }

        @Override
        public void needed(boolean needed) {
            calls.add("needed " + needed);
        }

        @Override
        public void close() {
            calls.add("close");
        }
    }

    @Test
    void oneWatchServesEverySubscriberIsNeededWhileAnyIsAndClosesWithTheLast() {
        List<Recording> opened = new ArrayList<>();
        SharedCommitWatch shared = new SharedCommitWatch(wakeUp -> {
            Recording r = new Recording();
            r.wakeUp = wakeUp;
            opened.add(r);
            return r;
        });
        AtomicInteger a = new AtomicInteger();
        AtomicInteger b = new AtomicInteger();
        CommitSignals.CommitWatch wa = shared.watch(a::incrementAndGet);
        CommitSignals.CommitWatch wb = shared.watch(b::incrementAndGet);
        assertThat(opened).hasSize(1);
        Recording r = opened.get(0);

        r.wakeUp.run();
        assertThat(a).hasValue(1);
        assertThat(b).hasValue(1);

        wa.needed(false);
        assertThat(r.calls).as("b still needs it").isEmpty();
        wb.needed(false);
        assertThat(r.calls).containsExactly("needed false");
        wb.needed(true);
        assertThat(r.calls).containsExactly("needed false", "needed true");
        assertThat(wa.listening()).isTrue();

        wb.close();
        assertThat(r.calls).as("a, the one left, does not need it").containsExactly("needed false", "needed true",
                "needed false");
        wb.close();
        wa.close();
        assertThat(r.calls).endsWith("close");
        assertThat(wa.listening()).isFalse();
        assertThat(shared.subscribers()).isZero();

        shared.watch(() -> { }).close();
        assertThat(opened).as("a new subscriber opens a new one").hasSize(2);
    }
}
