package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.sql.SqlLeaderTransport;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Storage fencing and broker fencing against a paused leader, on the real Postgres and Kafka: a leader dispatcher in
 * a child JVM ({@link FencedLeaderChild}), publishing with Kafka's transactional producer, is frozen (SIGSTOP) holding
 * two kinds of records: one record of each of {@value #KEYS} keys on the broker, acknowledged, before it heard of the
 * acknowledgements (a leader paused between acknowledgement and purge), and one record of each of {@value #KEYS}
 * other keys read and about to be sent (a leader paused between reading and sending). A second dispatcher, in this
 * JVM, takes over once the leader group expires the frozen one, takes the next leader epoch in the database and the
 * transactional id in Kafka ({@code initTransactions}: the child's producer is fenced), and publishes and purges
 * everything, including more records written meanwhile. Then the first is let run on (SIGCONT): Kafka refuses its
 * sends (each record counted: every one of the {@value #KEYS} held sends must be refused, and none of them may reach
 * a {@code read_committed} consumer) and the database its purges (each refusal counted); it stands down, nothing is
 * lost and no key goes backwards for a {@code read_committed} consumer. Its health then says STANDBY, not FENCED
 * (#42): it rejoined the election, and once the successor is closed it leads again.
 *
 * <p>Run under both elections ({@link Scenario.Election}): Kafka's leader group, whose session expires while the
 * leader is frozen, and the database's lease ({@code SqlLeaderTransport}, #37), which lapses on the database's clock
 * while the leader is frozen and which the successor takes, bumping the epoch the child's writes are fenced by. Either
 * way the child's first write after SIGCONT is refused by the database: it reports no purge before its refusal.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class FencedLeaderEndToEndTest {
    private static final int KEYS = 20;
    private static final Duration WAIT = Duration.ofSeconds(60);

    /** The dispatchers' tuning: as the end-to-end scenarios'. */
    static Dispatcher dispatcher(String name, HikariDataSource pool, String bootstrap, Scenario.Election how,
                                 String leaderTopic, String transactionalId,
                                 Function<KafkaMessageBroker, MessageBroker> wrap, DispatcherListener listener) {
        PostgresStore store = PostgresStore.builder(pool).statementTimeout(Duration.ofSeconds(5)).build();
        KafkaMessageBroker kafka = KafkaMessageBroker.builder().bootstrapServers(bootstrap)
                .deliveryTimeout(Scenario.DELIVERY_TIMEOUT).property("client.id", "fence-" + name)
                .transactionalId(transactionalId).build();
        LeaderTransport election = how == Scenario.Election.DATABASE
                // as the end-to-end scenarios' nodes: the lease as long as Kafka's session
                ? SqlLeaderTransport.builder(store)
                        .dispatcherConfig(Scenario.CONFIG)
                        .deliveryTimeout(Scenario.DELIVERY_TIMEOUT)
                        .leaseDuration(Scenario.SESSION_TIMEOUT)
                        .renewInterval(Duration.ofMillis(400))
                        .acquireInterval(Duration.ofMillis(200))
                        .build()
                : KafkaLeaderTransport.builder().bootstrapServers(bootstrap)
                        .topic(leaderTopic)
                        .dispatcherConfig(Scenario.CONFIG)
                        .deliveryTimeoutOf(kafka)
                        .consumerProperty("session.timeout.ms", (int) Scenario.SESSION_TIMEOUT.toMillis())
                        .consumerProperty("max.poll.interval.ms", (int) Scenario.SESSION_TIMEOUT.toMillis())
                        .consumerProperty("client.id", "fence-" + name + "-leader")
                        .build();
        return Dispatcher.builder(store, wrap.apply(kafka)).leaderTransport(election).config(Scenario.CONFIG)
                .name(name).listener(listener).build();
    }

    /** The outbox's transactional id, the same in the child and here. */
    static String transactionalId(String topic) {
        return "outbox-" + topic;
    }

    @ParameterizedTest(name = "{0} election")
    @EnumSource(Scenario.Election.class)
    void aPausedLeadersSendsAreRefusedByKafkaAndItsPurgesByTheDatabaseOnceItsSuccessorTookOver(
            Scenario.Election election) throws Exception {
        JdbcServer pg = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        String url = pg.createDatabase("e2e_fence_sigstop_" + election.name().toLowerCase(Locale.ROOT));
        String topic = "e2e-fence-sigstop-" + Long.toHexString(System.nanoTime() & 0xffffffL);
        kafka.createTopic(topic, 4);
        String leaderTopic = topic + "-leader";
        Map<String, Integer> lastSeq = new HashMap<>();
        try (HikariDataSource pool = pool(pg, url, "fence_app", 2);
             TopicWatcher watcher = new TopicWatcher(kafka.bootstrapServers(), topic, true)) {
            PostgresStore admin = PostgresStore.builder(pool).build();
            admin.createSchema();
            watcher.start();
            List<String> reports = new CopyOnWriteArrayList<>();
            ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx128m", "-cp", System.getProperty("java.class.path"), FencedLeaderChild.class.getName(),
                    url, pg.username(), kafka.bootstrapServers(), topic, leaderTopic, election.name()).redirectErrorStream(true);
            pb.environment().put(FencedLeaderChild.PASSWORD_VARIABLE, pg.password());
            Process child = pb.start();
            Thread reader = readReports(child, reports);
            Writer commands = new java.io.OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
            Dispatcher successor = null;
            HikariDataSource successorPool = pool(pg, url, "fence_successor", 4);
            try {
                await(() -> reports.contains("LEADER"), "the child leads");
                // Phase 1: delivered and purged by the child.
                write(admin, pool, topic, lastSeq, 3, "k");
                await(() -> watcher.reached(lastSeq) && admin.backlog() == 0, "the child drained phase 1");
                // Phase 2: one record per key, on the broker, its acknowledgement held back in the child; then freeze.
                command(commands, "HOLD");
                await(() -> reports.contains("HOLDING"), "the child holds acknowledgements");
                write(admin, pool, topic, lastSeq, 1, "k");
                await(() -> watcher.reached(lastSeq), "phase 2 on the broker");
                assertThat(admin.backlog()).as("phase 2 unpurged").isEqualTo(KEYS);
                // Phase 2b: one record of each of other keys, read by the child and held before Kafka sees it.
                command(commands, "HOLD_SENDS");
                await(() -> reports.contains("HOLDING_SENDS"), "the child holds sends");
                write(admin, pool, topic, lastSeq, 1, "s");
                await(() -> reports.stream().filter("SEND_HELD"::equals).count() == KEYS, "the child holds phase 2b");
                signal(child, "-STOP");
                long paused = System.nanoTime();

                AtomicInteger refusedHere = new AtomicInteger();
                AtomicInteger refusedSendsHere = new AtomicInteger();
                successor = dispatcher("successor", successorPool, kafka.bootstrapServers(), election,
                        leaderTopic, transactionalId(topic), k -> k, new DispatcherListener() {
                            @Override
                            public void failure(String operation, Throwable error) {
                                if (error instanceof StoreFencedException) {
                                    refusedHere.incrementAndGet();
                                } else if (error instanceof DeliveryException d && d.isFenced()) {
                                    refusedSendsHere.incrementAndGet();
                                }
                            }
                        });
                successor.start();
                Dispatcher s = successor;
                await(s::isLeader, "the successor leads");
                long tookOver = System.nanoTime();
                write(admin, pool, topic, lastSeq, 2, "k"); // phase 3, by the successor alone
                await(() -> watcher.reached(lastSeq) && admin.backlog() == 0,
                        "the successor drained phases 2, 2b and 3");

                int reportsBeforeResume = reports.size();
                signal(child, "-CONT");
                long resumed = System.nanoTime();
                command(commands, "RELEASE");
                await(() -> reports.stream().anyMatch(r -> r.startsWith("RELEASED")), "the child released");
                await(() -> reports.stream().anyMatch(r -> r.startsWith("REFUSED_SENDS")), "the child's refused sends");
                await(() -> reports.stream().anyMatch(r -> r.startsWith("HELD_SENDS")),
                        "Kafka's answer to each of the child's held sends");
                await(() -> reports.stream().anyMatch(r -> r.startsWith("FENCED")), "the child's refused purge");
                // Its election stops it (the lapsed lease, then the lost partition or lease row): wait until it no
                // longer leads.
                await(() -> lastOf(reports, "LEADER", "STOOD_DOWN").equals("STOOD_DOWN")
                        && watcher.reached(lastSeq), "the child stood down");
                String released = reports.stream().filter(r -> r.startsWith("RELEASED")).findFirst().orElseThrow();

                write(admin, pool, topic, lastSeq, 1, "k"); // phase 4: the successor leads and delivers
                await(() -> watcher.reached(lastSeq) && admin.backlog() == 0, "phase 4 drained");
                long refused = reports.stream().filter(r -> r.startsWith("FENCED")).count();
                long refusedSends = reports.stream().filter(r -> r.startsWith("REFUSED_SENDS"))
                        .mapToLong(r -> Long.parseLong(r.substring("REFUSED_SENDS ".length()))).max().orElse(0);
                assertThat(watcher.violations()).as("per-key order, read_committed").isEmpty();
                assertThat(watcher.distinct()).as("every committed record consumed, none lost")
                        .isEqualTo((long) KEYS * 8);
                // Every send the child held while frozen is refused by Kafka (its producer fenced) and none reaches a
                // read_committed consumer: 7 refused and 13 let out through a new producer would fail here.
                String[] held = reports.stream().filter(r -> r.startsWith("HELD_SENDS")).findFirst().orElseThrow()
                        .split(" ");
                int heldSends = Integer.parseInt(held[1]);
                int heldRefused = Integer.parseInt(held[2]);
                int heldAcknowledged = Integer.parseInt(held[3]);
                int heldFailed = Integer.parseInt(held[4]);
                assertThat(heldSends).as("the child's held sends").isEqualTo(KEYS);
                assertThat(heldRefused).as("the child's held sends refused by Kafka as fenced (of %d: %d"
                        + " acknowledged, %d failed otherwise)", heldSends, heldAcknowledged, heldFailed)
                        .isEqualTo(heldSends);
                assertThat(refusedSends).as("the child's sends refused by Kafka").isPositive();
                List<String> heldConsumed = heldRecordsConsumed(kafka.bootstrapServers(), topic);
                assertThat(heldConsumed).as("the child's held sends seen by a read_committed consumer").isEmpty();
                assertThat(refused).as("the child's writes refused by the database").isPositive();
                // Its lease lapsed while it was frozen: it asks its election to reconfirm it (Kafka's group, the
                // lease row), which finds it gone, so it does not lead while the successor does and never takes an
                // epoch from it; its first write after SIGCONT, the held acknowledgements' purge, was refused.
                List<String> afterResume = List.copyOf(reports).subList(reportsBeforeResume, reports.size());
                assertThat(afterResume).as("the resumed child's reports").doesNotContain("LEADER");
                assertThat(afterResume.stream().filter(r -> r.startsWith("FENCED") || r.startsWith("PURGED"))
                        .findFirst()).as("the resumed child's first write, in %s", afterResume)
                        .hasValueSatisfying(r -> assertThat(r).startsWith("FENCED"));
                assertThat(refusedHere.get()).as("the successor's writes refused (the child took an epoch)").isZero();
                assertThat(successor.isLeader()).isTrue();
                assertThat(admin.parked(10)).isEmpty();
                // #42: the resumed child is a standby again, not FENCED until closed, and can lead again.
                await(() -> lastStatus(reports).equals("STANDBY"), "the resumed child reports STANDBY");
                long standbyMillis = (System.nanoTime() - resumed) / 1_000_000;
                int reportsBeforeHandOver = reports.size();
                successor.close();
                successor = null;
                await(() -> List.copyOf(reports).subList(reportsBeforeHandOver, reports.size()).contains("LEADER")
                        && lastStatus(reports).equals("LEADER"), "the rejoined child leads again");
                long leadsAgainMillis = (System.nanoTime() - resumed) / 1_000_000;
                System.out.printf("%s election: storage and broker fencing, a leader paused (SIGSTOP) holding %d sends and %s"
                        + " acknowledgements: the successor led %d ms after the pause; after SIGCONT Kafka refused %d"
                        + " of the %d held sends (%d of the child's sends in all: fenced producer), %d of them seen by"
                        + " a read_committed consumer, and the database %d of its purges; it stood down"
                        + " without leading while the successor led; the successor's writes refused: %d, sends refused: %d;"
                        + " read_committed: %d records consumed once each, %d copies in all, 0 lost, 0 per-key order"
                        + " violations; the resumed child reported STANDBY %d ms after SIGCONT and led again %d ms"
                        + " after it, once the successor was closed%n",
                        election, heldSends, released.substring("RELEASED ".length()), (tookOver - paused) / 1_000_000,
                        heldRefused, heldSends, refusedSends, heldConsumed.size(), refused, refusedHere.get(),
                        refusedSendsHere.get(), watcher.distinct(), watcher.records(), standbyMillis, leadsAgainMillis);
            } finally {
                if (successor != null) {
                    successor.close();
                }
                successorPool.close();
                signal(child, "-CONT");
                child.destroyForcibly();
                child.waitFor(10, TimeUnit.SECONDS);
                reader.join(5_000);
            }
        }
    }

    /**
     * Writes {@code perKey} records of each of the {@value #KEYS} keys {@code <prefix>0…}, one transaction each, with
     * the next sequence numbers.
     */
    private static void write(PostgresStore store, HikariDataSource pool, String topic, Map<String, Integer> lastSeq,
                              int perKey, String prefix) throws Exception {
        for (int n = 0; n < perKey; n++) {
            for (int k = 0; k < KEYS; k++) {
                String key = prefix + k;
                int seq = lastSeq.getOrDefault(key, 0) + 1;
                try (Connection c = pool.getConnection()) {
                    c.setAutoCommit(false);
                    store.publisher().publish(c, OutboxMessage.builder(topic, key).value(Values.encode(seq, key))
                            .build());
                    c.commit();
                }
                lastSeq.put(key, seq);
            }
        }
    }

    /**
     * The records carrying {@link FencedLeaderChild#HELD_HEADER} (the child's held sends) that a fresh
     * {@code read_committed} consumer reads from every partition of {@code topic}, from the beginning to the end
     * (the last stable offset: no transaction is still open by then), each described.
     */
    private static List<String> heldRecordsConsumed(String bootstrap, String topic) {
        List<String> found = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.CLIENT_ID_CONFIG, "e2e-fence-held-check"),
                new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            long[] records = {0};
            await(() -> {
                for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    records[0]++;
                    if (r.headers().lastHeader(FencedLeaderChild.HELD_HEADER) != null) {
                        found.add("key " + r.key() + ", record " + new String(r.headers().lastHeader(
                                FencedLeaderChild.HELD_HEADER).value(), StandardCharsets.UTF_8) + " at partition "
                                + r.partition() + " offset " + r.offset());
                    }
                }
                return partitions.stream().allMatch(p -> consumer.position(p) >= end.get(p));
            }, "a read_committed consumer read the topic to its end");
            assertThat(records[0]).as("records read by the check").isGreaterThanOrEqualTo((long) KEYS * 8);
        }
        return found;
    }

    private static HikariDataSource pool(JdbcServer pg, String url, String name, int size) {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(url);
        hc.setUsername(pg.username());
        hc.setPassword(pg.password());
        hc.setMaximumPoolSize(size);
        hc.setPoolName(name);
        return new HikariDataSource(hc);
    }

    private static Thread readReports(Process child, List<String> reports) {
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    if (line.startsWith(FencedLeaderChild.PREFIX)) {
                        reports.add(line.substring(FencedLeaderChild.PREFIX.length()));
                    }
                    if (line.startsWith(FencedLeaderChild.PREFIX) || line.contains(" WARN ")
                            || line.contains(" ERROR ")) {
                        System.out.println("child: " + line);
                    }
                }
            } catch (IOException e) {
                // the child was killed
            }
        }, "fence-child-output");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The status the child reported last ({@code STATUS <status>}), or "" if none yet. */
    private static String lastStatus(List<String> reports) {
        for (int i = reports.size() - 1; i >= 0; i--) {
            if (reports.get(i).startsWith("STATUS ")) {
                return reports.get(i).substring("STATUS ".length());
            }
        }
        return "";
    }

    /** Which of {@code a} and {@code b} was reported last, or "" if neither. */
    private static String lastOf(List<String> reports, String a, String b) {
        for (int i = reports.size() - 1; i >= 0; i--) {
            if (reports.get(i).equals(a) || reports.get(i).equals(b)) {
                return reports.get(i);
            }
        }
        return "";
    }

    private static void command(Writer commands, String command) throws IOException {
        commands.write(command + "\n");
        commands.flush();
    }

    private static void signal(Process child, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", signal, Long.toString(child.pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    }

    private static void await(java.util.function.BooleanSupplier condition, String what) {
        Scenario.await(condition, WAIT, () -> what);
    }
}
