package dev.outbox.it;

import dev.outbox.DispatcherConfig;
import dev.outbox.ParkedRecord;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The data topic is unavailable for a long time while the writers keep writing, with {@code maxAttempts} 3: it
 * parks nothing and loses nothing, and per-key order holds when it returns (issue #20, "outage is not poison").
 *
 * <p>How the topic is made unavailable: its {@code min.insync.replicas} is raised to 2 on the single broker (the
 * topic has one replica), so the broker refuses every {@code acks=all} write to it with {@code NOT_ENOUGH_REPLICAS}
 * — what it answers when a topic's replicas are lost — while the broker, the leader group's topic and the database
 * stay up. (Deleting the topic would be a different fault: a topic that does not exist is a permanent failure by
 * design, and its records are parked, see the README's Kafka failures.) The producers retry until their delivery
 * timeout (2 s), then the dispatcher is told of an outage: it holds the failing keys behind one backoff, counts no
 * attempt and parks nothing, and its {@code health().outageSince()} says since when. Three failed deliveries take
 * about 6 s, so under a poison record's treatment every record in flight would have been parked within the outage.
 * Then the setting is removed: the topic takes writes again and the backlog drains. {@link Scenario#finish()} asserts
 * G1–G4 and G6: nothing lost, per-key order, duplicates only for records in flight at the fault or whose own delivery
 * was reported failed (counted and printed), nothing parked but the scenario's two poison records.
 *
 * <p>The build runs an 8 s outage. The five-minute run of the "Done when":
 * <pre>
 * ./mvnw -B -pl outbox-integration-tests -am verify -Dtest=TopicOutageEndToEndTest \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Doutbox.e2e.topicOutage=PT5M -Doutbox.e2e.writerPauseMicros=20000
 * </pre>
 * ({@code writerPauseMicros} slows the writers, whose backlog is not limited during the outage, to a few hundred
 * messages a second, so that five minutes of backlog drain in seconds.)
 */
@Timeout(value = 12, unit = TimeUnit.MINUTES)
class TopicOutageEndToEndTest {
    /** The outage in the build: longer than three failed deliveries (3 × the 2 s delivery timeout). */
    static final Duration SHORT_OUTAGE = Duration.ofSeconds(8);
    /** Acknowledgements of new sends flow again within this bound once the topic takes writes again. */
    static final Duration RECOVERY_BOUND = Duration.ofSeconds(15);

    @Test
    void aTopicUnavailableForLongParksNothingAndLosesNothing() throws Exception {
        Long fixed = Long.getLong("outbox.e2e.seed");
        long seed = fixed != null ? fixed : System.nanoTime();
        String configured = System.getProperty("outbox.e2e.topicOutage");
        Duration outage = configured == null || configured.isBlank() ? SHORT_OUTAGE : Duration.parse(configured);
        DispatcherConfig config = Scenario.CONFIG.toBuilder().maxAttempts(3).build();
        try (Scenario s = Scenario.start("topic_outage", seed, config)) {
            s.awaitTraffic(300);
            s.injectPoison(); // the two poison records: parked, as in every scenario
            s.awaitTraffic(300);
            s.awaitLeader();
            int parkedBefore = parked(s);

            s.limitBacklog(false); // the writers keep writing while nothing is published
            long down = System.nanoTime();
            s.fault("topic unavailable (min.insync.replicas above its replicas)",
                    () -> minInsyncReplicas(s, "2"));
            s.awaitFailedSendAfter(down, "making the topic unavailable");
            String paused = s.awaitPaused("the topic made unavailable");
            long pausedMillis = Scenario.millisSince(down);
            int[] peakWaiting = {0};
            Scenario.await(() -> {
                assertThat(parked(s)).as("parked during the outage (seed %d)", seed).isEqualTo(parkedBefore);
                peakWaiting[0] = Math.max(peakWaiting[0], s.waiting());
                return Scenario.millisSince(down) >= outage.toMillis();
            }, outage.plus(Scenario.WAIT), () -> "the outage's end");
            Node leader = s.awaitLeader();
            assertThat(leader.dispatcher.health().outageSince()).as("health reports the outage at its end (seed %d)",
                    seed).isPresent();
            int committedDuring = s.waiting();

            long restored = s.armAll();
            minInsyncReplicas(s, null);
            long resumedMillis = s.awaitFirstAckOfSendAfter(restored, "the topic made available again");
            Scenario.await(() -> s.live().stream().noneMatch(n -> n.dispatcher.health().outageSince().isPresent()),
                    Scenario.WAIT, () -> "health no longer reports the outage");
            s.limitBacklog(true);
            s.awaitTraffic(300);
            Scenario.Result r = s.finish();
            s.note(String.format("topic unavailable for %d s (maxAttempts 3): %s; the outbox paused %d ms after the"
                    + " fault, %d messages waiting at its end; publishing again %d ms after the topic returned;"
                    + " %d parked during it, %d duplicates", outage.toSeconds(), paused, pausedMillis,
                    committedDuring, resumedMillis, parked(s) - parkedBefore, r.duplicates()));
            System.out.println("E2E topic_outage " + String.join("; ", List.of(
                    "outage " + outage.toSeconds() + " s", "paused after " + pausedMillis + " ms",
                    "waiting at its end " + committedDuring, "peak waiting " + peakWaiting[0],
                    "resumed after " + resumedMillis + " ms", "duplicates " + r.duplicates(),
                    "parked " + r.parked())));

            assertThat(committedDuring).as("the writers kept writing during the outage (seed %d)", seed)
                    .isGreaterThan(0);
            assertThat(r.parked()).as("nothing parked but the two poison records (seed %d)", seed).isEqualTo(2);
            assertThat(Duration.ofMillis(resumedMillis)).as("publishing resumed (seed %d)", seed)
                    .isLessThanOrEqualTo(RECOVERY_BOUND);
        }
    }

    /** Distinct records the nodes reported parked. */
    private static int parked(Scenario s) {
        return (int) s.live().stream().flatMap(n -> n.parked.stream()).map(ParkedRecord::id).distinct().count();
    }

    /** Sets (or, with null, removes) the data topic's {@code min.insync.replicas}, and waits until it applies. */
    private static void minInsyncReplicas(Scenario s, String value) {
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, s.topic());
        ConfigEntry entry = new ConfigEntry("min.insync.replicas", value == null ? "" : value);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                s.kafka().bootstrapServers()))) {
            admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(entry,
                    value == null ? AlterConfigOp.OpType.DELETE : AlterConfigOp.OpType.SET)))).all()
                    .get(30, TimeUnit.SECONDS);
            String raised = "2";
            Scenario.await(() -> {
                try {
                    ConfigEntry e = admin.describeConfigs(List.of(topic)).all().get(30, TimeUnit.SECONDS).get(topic)
                            .get("min.insync.replicas");
                    return e != null && (value == null ? !raised.equals(e.value()) : value.equals(e.value()));
                } catch (Exception ex) {
                    return false;
                }
            }, Scenario.WAIT, () -> "min.insync.replicas of " + s.topic() + (value == null ? " back to the default"
                    : " = " + value));
        } catch (Exception e) {
            throw new IllegalStateException("could not set min.insync.replicas of " + s.topic() + " to " + value, e);
        }
    }
}
