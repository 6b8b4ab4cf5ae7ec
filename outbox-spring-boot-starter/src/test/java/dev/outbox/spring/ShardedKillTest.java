package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.spi.Store;
import dev.outbox.spring.app.JdbcOrders;
import dev.outbox.spring.app.StandaloneApplication;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.Capabilities;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two instances of an application share a table of four shards ({@code outbox.store.shards=4}, the starter wiring
 * the Kafka shard-leader group); one runs in a JVM of its own and is killed with SIGKILL while it leads shards: the
 * other takes every shard and publishes everything, each customer's orders in the order they were placed, nothing
 * lost (duplicates are allowed: the killed leader's records in flight are sent again).
 */
class ShardedKillTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final int ORDERS = 200;
    private static final int CUSTOMERS = 40;
    private static final Pattern ORDER_ID = Pattern.compile("\"orderId\"\\s*:\\s*(\\d+)");

    @Test
    void aKilledInstancesShardsMoveToTheOtherAndNothingIsLost() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        String url = postgres.createDatabase("starter_sharded_kill");
        Map<String, String> properties = new HashMap<>(Map.of(
                "spring.datasource.url", url,
                "spring.datasource.username", postgres.username(),
                "spring.kafka.bootstrap-servers", kafka.bootstrapServers(),
                "spring.flyway.enabled", "true",
                "spring.flyway.locations", "classpath:db/migration",
                "outbox.store.shards", "4",
                "outbox.store.create-schema", "true",
                "outbox.kafka.leader-topic", "starter-sharded-kill-leader"));
        List<String> args = properties.entrySet().stream().map(e -> "--" + e.getKey() + "=" + e.getValue())
                .collect(Collectors.toList());

        ConfigurableApplicationContext survivor = start(args, postgres.password());
        Process victim = null;
        try {
            victim = launch(args, postgres.password());
            Dispatcher b = survivor.getBean(OutboxDispatcherLifecycle.class).dispatcher();
            Await.untilOrFail(() -> !led(b).isEmpty() && led(b).size() < 4, TIMEOUT,
                    () -> "the two instances share the 4 shards: this one leads " + led(b));

            JdbcOrders orders = survivor.getBean(JdbcOrders.class);
            for (int id = 1; id <= ORDERS / 2; id++) {
                orders.place(id, "kill-" + (id % CUSTOMERS), false);
            }
            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "orders")) {
                reader.readUntil(r -> distinct(r) >= ORDERS / 2, TIMEOUT); // the killed one published its share
            }
            Set<Integer> before = led(b);
            victim.destroyForcibly(); // SIGKILL: no close, no hand-over
            assertThat(victim.waitFor(30, TimeUnit.SECONDS)).as("killed").isTrue();
            for (int id = ORDERS / 2 + 1; id <= ORDERS; id++) {
                orders.place(id, "kill-" + (id % CUSTOMERS), false);
            }
            Await.untilOrFail(() -> led(b).size() == 4, TIMEOUT,
                    () -> "the survivor took every shard; it led " + before + ", leads " + led(b));
            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "orders")) {
                List<ConsumerRecord<String, String>> got = reader.readUntil(r -> distinct(r) >= ORDERS, TIMEOUT);
                assertThat(distinct(got)).as("every order published").isEqualTo(ORDERS);
                assertPerCustomerOrder(got);
            }
            Store store = survivor.getBean(Store.class);
            Await.untilOrFail(() -> Capabilities.gauges(store).backlog() == 0, TIMEOUT,
                    () -> "outbox purged, backlog " + Capabilities.gauges(store).backlog());
        } finally {
            if (victim != null) {
                victim.destroyForcibly();
            }
            survivor.close();
        }
    }

    /** Each customer's orders as consumed: increasing, a repeat allowed only of what came before (a resend). */
    private static void assertPerCustomerOrder(List<ConsumerRecord<String, String>> records) {
        Map<String, Long> last = new HashMap<>();
        Map<String, Set<Long>> seen = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
            if (r.key() == null || !r.key().startsWith("kill-")) {
                continue;
            }
            Matcher m = ORDER_ID.matcher(r.value());
            assertThat(m.find()).as("an order id in %s", r.value()).isTrue();
            long id = Long.parseLong(m.group(1));
            Set<Long> ids = seen.computeIfAbsent(r.key(), k -> new java.util.HashSet<>());
            if (!ids.add(id)) {
                continue; // a duplicate of what was in flight when the leader died
            }
            Long previous = last.put(r.key(), id);
            assertThat(previous == null || previous < id)
                    .as("customer %s: order %d after %d", r.key(), id, previous).isTrue();
        }
    }

    private static ConfigurableApplicationContext start(List<String> args, String password) {
        List<String> all = new ArrayList<>(args);
        all.add("--spring.datasource.password=" + password); // in this JVM: not a command line
        return new SpringApplicationBuilder(TestApplication.class).web(WebApplicationType.NONE)
                .run(all.toArray(String[]::new));
    }

    /** The application in a JVM of its own, the password in its environment; returns once its context is up. */
    private static Process launch(List<String> args, String password) throws Exception {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                StandaloneApplication.class.getName()));
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("SPRING_DATASOURCE_PASSWORD", password);
        Process process = builder.start();
        CountDownLatch started = new CountDownLatch(1);
        Thread output = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    if (line.equals("STARTED")) {
                        started.countDown();
                    } else if (line.contains("ERROR") || line.contains("Exception")) {
                        System.err.println("[victim] " + line);
                    }
                }
            } catch (java.io.IOException e) {
                // the process is gone
            }
        }, "victim-output");
        output.setDaemon(true);
        output.start();
        if (!started.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the application's JVM did not start within " + TIMEOUT);
        }
        return process;
    }

    /** The shards this dispatcher leads now. */
    private static Set<Integer> led(Dispatcher d) {
        List<DispatcherHealth> shards = d.shardHealth();
        return IntStream.range(0, shards.size()).filter(i -> shards.get(i).status() == DispatcherHealth.Status.LEADER)
                .boxed().collect(Collectors.toSet());
    }

    private static long distinct(List<ConsumerRecord<String, String>> records) {
        return records.stream().filter(r -> r.key() != null && r.key().startsWith("kill-"))
                .map(ConsumerRecord::value).distinct().count();
    }
}
