package dev.outbox.testkit;

import dev.outbox.DispatcherListener;
import org.junit.jupiter.api.Test;

import java.util.UUID;

import static dev.outbox.testkit.LeadershipTimeline.Kind.ACQUIRED;
import static dev.outbox.testkit.LeadershipTimeline.Kind.FENCED;
import static dev.outbox.testkit.LeadershipTimeline.Kind.REFRESHED;
import static dev.outbox.testkit.LeadershipTimeline.Kind.REVOKED;
import static dev.outbox.testkit.LeadershipTimeline.Kind.STOPPED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LeadershipTimelineTest {

    @Test
    void handOversInTurnAreExclusive() {
        LeadershipTimeline t = new LeadershipTimeline();
        t.add("a", ACQUIRED, UUID.randomUUID());
        t.add("a", REFRESHED, UUID.randomUUID());
        t.add("a", REVOKED, null);
        t.add("b", ACQUIRED, UUID.randomUUID());
        t.add("b", FENCED, null);
        t.add("c", ACQUIRED, UUID.randomUUID());
        t.add("c", STOPPED, null);
        t.assertExclusive();
        assertThat(t.count(e -> e.kind() == ACQUIRED)).isEqualTo(3);
    }

    @Test
    void anAcquisitionWhileAnotherLeadsIsReported() {
        LeadershipTimeline t = new LeadershipTimeline();
        t.add("a", ACQUIRED, UUID.randomUUID());
        t.add("b", ACQUIRED, UUID.randomUUID());
        assertThatThrownBy(t::assertExclusive).isInstanceOf(AssertionError.class)
                .hasMessageContaining("b acquired while [a] led");
    }

    @Test
    void aReusedLeaderIdIsReported() {
        LeadershipTimeline t = new LeadershipTimeline();
        UUID id = UUID.randomUUID();
        t.add("a", ACQUIRED, id);
        t.add("a", FENCED, null);
        t.add("a", ACQUIRED, id);
        assertThatThrownBy(t::assertExclusive).isInstanceOf(AssertionError.class)
                .hasMessageContaining("leader id " + id + " reused");
        LeadershipTimeline refreshed = new LeadershipTimeline();
        refreshed.add("a", ACQUIRED, id);
        refreshed.add("a", REFRESHED, id);
        assertThatThrownBy(refreshed::assertExclusive).hasMessageContaining("reused");
    }

    @Test
    void theListenerRecordsADispatchersLeadershipEvents() {
        LeadershipTimeline t = new LeadershipTimeline();
        DispatcherListener l = t.listener("d1");
        UUID first = UUID.randomUUID();
        long before = System.nanoTime();
        l.leaderAcquired(first);
        l.leaderRefreshed(UUID.randomUUID());
        l.leaderFenced();
        l.leaderRevoked();
        assertThat(t.events()).extracting(LeadershipTimeline.Event::kind)
                .containsExactly(ACQUIRED, REFRESHED, FENCED, REVOKED);
        assertThat(t.events()).allSatisfy(e -> assertThat(e.who()).isEqualTo("d1"));
        assertThat(t.first(before, e -> e.kind() == ACQUIRED).leaderId()).isEqualTo(first);
        assertThat(t.first(System.nanoTime(), e -> true)).isNull();
        assertThat(t.toString()).contains("d1").contains(first.toString());
    }
}
