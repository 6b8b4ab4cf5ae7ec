package dev.outbox.broker.kafka;

import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The consumer process killed (SIGKILL) after the database committed the effects of some records and before their
 * offsets were committed: a new consumer in the same group gets those records again, the inbox recognises every one
 * of them, and each message's effect is in the database exactly once.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class KafkaInboxConsumerCrashTest {
    private static final int RECORDS = 40;
    private static final int COMMITTED_BEFORE_KILL = 15;

    @Test
    void aConsumerKilledBetweenItsDatabaseCommitAndItsOffsetCommitAppliesNothingTwice() throws Exception {
        KafkaServer kafka = TestServers.kafka();
        JdbcServer pg = TestServers.postgres();
        String url = pg.createDatabase("inbox_crash");
        DataSource db = pg.dataSource(url);
        String suffix = Long.toHexString(System.nanoTime() & 0xffffff);
        String topic = "inbox-crash-" + suffix;
        String group = "inbox-crash-" + suffix;
        kafka.createTopic(topic, 1);
        InboxTestSupport.createEffects(db, "effects_crash");
        PostgresInbox inbox = InboxTestSupport.inbox(db, "inbox_crash");
        InboxTestSupport.sendWithIds(kafka.bootstrapServers(), topic,
                IntStream.range(0, RECORDS).mapToObj(i -> "v" + i).toList());

        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), InboxConsumerChild.class.getName(),
                kafka.bootstrapServers(), topic, group, "crash", url, pg.username(), pg.password(), "effects_crash",
                "inbox_crash", String.valueOf(COMMITTED_BEFORE_KILL))
                .redirectErrorStream(true).start();
        List<String> output = new ArrayList<>();
        try {
            CompletableFuture<Boolean> committed = CompletableFuture.supplyAsync(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(child.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String line = in.readLine(); line != null; line = in.readLine()) {
                        synchronized (output) {
                            output.add(line);
                        }
                        if (line.equals("COMMITTED " + COMMITTED_BEFORE_KILL)) {
                            return true;
                        }
                    }
                    return false;
                } catch (java.io.IOException e) {
                    return false;
                }
            });
            assertThat(committed.get(90, TimeUnit.SECONDS)).as("the child got to its kill point: %s", output).isTrue();
        } finally {
            child.destroyForcibly(); // SIGKILL
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
        long committedOffset = 0;
        synchronized (output) {
            for (String line : output) {
                if (line.startsWith("OFFSETS ")) {
                    committedOffset = Long.parseLong(line.substring("OFFSETS ".length()).trim());
                }
            }
        }
        // Records before the committed offset are not redelivered; those from it up to the kill point are, although
        // their effects are committed. The last applied record's offset is never committed.
        long redelivered = COMMITTED_BEFORE_KILL - committedOffset;
        assertThat(redelivered).as("records committed in the database, not in Kafka").isPositive();
        assertThat(InboxTestSupport.effectCounts(db, "effects_crash")).as("effects committed by the killed consumer")
                .hasSize(COMMITTED_BEFORE_KILL);

        long committedFrom = committedOffset;
        try (KafkaInboxConsumer next = KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers())
                .groupId(group).consumerName("crash").topics(topic).dataSource(db).inbox(inbox)
                .handler(InboxTestSupport.effectHandler("effects_crash"))
                .property("session.timeout.ms", 6000).property("heartbeat.interval.ms", 500).build()) {
            next.start();
            Await.untilOrFail(() -> next.applied() + next.duplicates() == RECORDS - committedFrom,
                    Duration.ofSeconds(90), () -> next.applied() + " applied, " + next.duplicates() + " duplicates");
            assertThat(next.duplicates()).as("redelivered after the kill, skipped by the inbox")
                    .isEqualTo(redelivered);
            assertThat(next.applied()).isEqualTo(RECORDS - COMMITTED_BEFORE_KILL);
        }
        System.out.println("inbox consumer SIGKILLed after " + COMMITTED_BEFORE_KILL + " database commits, offsets"
                + " committed up to " + committedOffset + ": " + redelivered
                + " redelivered and skipped, 0 applied twice");
        Map<String, Integer> counts = InboxTestSupport.effectCounts(db, "effects_crash");
        assertThat(counts).hasSize(RECORDS).allSatisfy((v, n) -> assertThat(n).as(v).isEqualTo(1));
    }
}
