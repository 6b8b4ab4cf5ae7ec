package dev.outbox.examples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the README's snippets ({@link ReadmeSnippets}) against real servers, and checks that the copies of every
 * snippet in the README and in the guide's pages ({@code docs/**}.md) have not drifted from the compiled code.
 */
class ReadmeSnippetsTest {
    private static final Path MODULE = Path.of(System.getProperty("basedir", "."));
    private static final Path ROOT = MODULE.resolve("..").normalize();
    private static final Pattern MARKER = Pattern.compile("^<!-- snippet: (\\S+) -->$"); // a line of its own

    @Test
    void theDatabaseElectionSnippetLeadsAndPublishes() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(postgres.createDatabase("readme_database_election"));
        pool.setUsername(postgres.username());
        pool.setPassword(postgres.password());
        try (HikariDataSource dataSource = new HikariDataSource(pool)) {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL)");
            }
            PostgresStore store = ReadmeSnippets.createSchema(dataSource);
            Dispatcher dispatcher = ReadmeSnippets.databaseElectedDispatcher(store,
                    dev.outbox.broker.kafka.KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                            .build(), DispatcherConfig.defaults());
            dispatcher.start();
            try {
                Await.untilOrFail(dispatcher::isLeader, Duration.ofSeconds(30), () -> "elected in the database");
                ReadmeSnippets.placeOrder(dataSource, store, 2001, "customer-db");
                Await.untilOrFail(() -> store.backlog() == 0, Duration.ofSeconds(30), () -> "outbox purged");
            } finally {
                ReadmeSnippets.stopDispatcher(dispatcher);
            }
        }
    }

    @Test
    void theQuickStartPublishesAnOrderCommittedWithPlainJdbc() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(postgres.createDatabase("readme_snippets"));
        pool.setUsername(postgres.username());
        pool.setPassword(postgres.password());
        try (HikariDataSource dataSource = new HikariDataSource(pool)) {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL)");
            }
            PostgresStore store = ReadmeSnippets.createSchema(dataSource);
            Dispatcher dispatcher = ReadmeSnippets.startDispatcher(store, kafka.bootstrapServers(),
                    ReadmeSnippets.listener());
            try {
                ReadmeSnippets.placeOrder(dataSource, store, 1001, "customer-42");
                ReadmeSnippets.placeOrder(dataSource, store, 1002, "customer-42");

                List<ConsumerRecord<String, String>> got = read(kafka.bootstrapServers(), "orders", 2);
                assertThat(got).extracting(ConsumerRecord::key).containsExactly("customer-42", "customer-42");
                assertThat(got).extracting(ConsumerRecord::value)
                        .containsExactly("{\"orderId\":1001}", "{\"orderId\":1002}");
                assertThat(new String(got.get(0).headers().lastHeader("type").value(), StandardCharsets.UTF_8))
                        .isEqualTo("OrderPlaced");
                Await.untilOrFail(() -> store.backlog() == 0, Duration.ofSeconds(30), () -> "outbox purged");
            } finally {
                ReadmeSnippets.stopDispatcher(dispatcher);
            }
            assertThat(dispatcher.state()).isEqualTo(Dispatcher.State.CLOSED);
            assertThat(dispatcher.isLeader()).isFalse();
        }
    }

    @Test
    void theReadmesCopiesOfTheSnippetsMatchTheCode() throws IOException {
        Map<String, String> quickStart = snippets(source("ReadmeSnippets"));
        assertThat(quickStart).containsOnlyKeys("schema", "write", "listener", "dispatcher", "shutdown",
                "databaseElection");

        TreeSet<String> referenced = new TreeSet<>();
        for (Path doc : docs()) {
            List<String> lines = Files.readAllLines(doc);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = MARKER.matcher(lines.get(i).strip());
                if (!m.matches()) {
                    continue;
                }
                String name = m.group(1);
                String block = fencedBlockAfter(lines, i, doc);
                String where = doc + ":" + (i + 1);
                if (name.equals("dependencies")) {
                    checkDependencies(block, where);
                } else if (name.contains("#")) { // Class#tag: a tagged region of a class of this module
                    String tag = name.substring(name.indexOf('#') + 1);
                    Map<String, String> tags = snippets(source(name.substring(0, name.indexOf('#'))));
                    assertThat(tags).as("tags of the class named at %s", where).containsKey(tag);
                    assertThat(block).as("the README's copy at %s of %s", where, name).isEqualTo(tags.get(tag));
                } else { // a whole file: of the repository if the name starts with '/', else a resource of this module
                    Path path = name.startsWith("/") ? ROOT.resolve(name.substring(1)) : resource(name);
                    String file = Files.readString(path).stripTrailing();
                    assertThat(block).as("the README's copy at %s of %s", where, name).isEqualTo(file);
                }
                referenced.add(name);
            }
        }
        // If the README stopped marking its snippets, this check would pass vacuously: it must find them all.
        assertThat(referenced).as("snippets the README marks")
                .containsAll(quickStart.keySet().stream().map(t -> "ReadmeSnippets#" + t).toList())
                .contains("dependencies", "goharvest-migration.sql", "WebhookMessageBrokerContractTest#contract",
                        "ObservabilitySnippets#metrics", "ObservabilitySnippets#tracing",
                        "ObservabilitySnippets#health",
                        "application.yml", "Orders#place",
                        "InboxSnippets#inbox", "InboxSnippets#process", "InboxSnippets#consumer",
                        "/docs/performance/results.txt",
                        "/outbox-sidecar/src/test/resources/dev/outbox/sidecar/inbox-example.yaml");
    }

    /** The source file of a class of this module, main or test, in dev.outbox.examples or its spring package. */
    private static Path source(String simpleName) {
        for (String tree : List.of("src/main/java", "src/test/java")) {
            for (String pkg : List.of("dev/outbox/examples", "dev/outbox/examples/spring")) {
                Path p = MODULE.resolve(tree).resolve(pkg).resolve(simpleName + ".java");
                if (Files.exists(p)) {
                    return p;
                }
            }
        }
        throw new AssertionError("no class " + simpleName + " in outbox-examples");
    }

    /** A resource file of this module: a test resource, else a main one (e.g. the Spring example's application.yml). */
    private static Path resource(String name) {
        for (String tree : List.of("src/test/resources", "src/main/resources")) {
            Path p = MODULE.resolve(tree).resolve(name);
            if (Files.exists(p)) {
                return p;
            }
        }
        throw new AssertionError("no resource " + name + " in outbox-examples");
    }

    /** The README's Maven snippet names real modules of this build, at its version. */
    private static void checkDependencies(String xml, String where) throws IOException {
        String rootPom = Files.readString(ROOT.resolve("pom.xml"));
        Matcher version = Pattern.compile("<artifactId>outbox-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(rootPom);
        assertThat(version.find()).as("version in the root pom").isTrue();
        List<String> artifacts = Pattern.compile("<artifactId>([^<]+)</artifactId>").matcher(xml).results()
                .map(r -> r.group(1)).toList();
        assertThat(artifacts).as("artifacts at %s", where).isNotEmpty();
        for (String artifact : artifacts) {
            assertThat(ROOT.resolve(artifact).resolve("pom.xml")).as("module %s named at %s", artifact, where)
                    .exists();
        }
        assertThat(Pattern.compile("<groupId>([^<]+)</groupId>").matcher(xml).results().map(r -> r.group(1)))
                .as("groupIds at %s", where).containsOnly("dev.outbox");
        assertThat(Pattern.compile("<version>([^<]+)</version>").matcher(xml).results().map(r -> r.group(1)))
                .as("versions at %s", where).containsOnly(version.group(1));
    }

    private static List<Path> docs() throws IOException {
        List<Path> docs = new ArrayList<>();
        if (Files.exists(ROOT.resolve("README.md"))) {
            docs.add(ROOT.resolve("README.md"));
        }
        Path dir = ROOT.resolve("docs"); // the guide's pages (the documentation site's sources)
        if (Files.isDirectory(dir)) {
            try (Stream<Path> files = Files.walk(dir)) {
                files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
            }
        }
        return docs;
    }

    private static String fencedBlockAfter(List<String> lines, int marker, Path doc) {
        int open = marker + 1;
        while (open < lines.size() && lines.get(open).isBlank()) {
            open++;
        }
        assertThat(open < lines.size() && lines.get(open).startsWith("```"))
                .as("a fenced code block right after the marker at %s:%d", doc, marker + 1).isTrue();
        int close = open + 1;
        while (close < lines.size() && !lines.get(close).startsWith("```")) {
            close++;
        }
        return lines.subList(open + 1, close).stream().map(String::stripTrailing).collect(Collectors.joining("\n"));
    }

    /** The tagged regions of a source file, each without its common indentation. */
    static Map<String, String> snippets(Path source) throws IOException {
        List<String> lines = Files.readAllLines(source);
        Map<String, String> result = new LinkedHashMap<>();
        Pattern start = Pattern.compile("// tag::(\\w+)\\[]");
        for (int i = 0; i < lines.size(); i++) {
            Matcher m = start.matcher(lines.get(i));
            if (!m.find()) {
                continue;
            }
            String end = "// end::" + m.group(1) + "[]";
            int from = i + 1;
            int to = IntStream.range(from, lines.size()).filter(j -> lines.get(j).contains(end)).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + end + " in " + source));
            List<String> body = lines.subList(from, to);
            int indent = body.stream().filter(l -> !l.isBlank())
                    .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
            result.put(m.group(1), body.stream().map(l -> l.isBlank() ? "" : l.substring(indent).stripTrailing())
                    .collect(Collectors.joining("\n")).strip());
        }
        return result;
    }

    private static List<ConsumerRecord<String, String>> read(String bootstrap, String topic, int expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Await.untilOrFail(() -> {
                consumer.poll(Duration.ofMillis(100)).forEach(got::add);
                return got.size() >= expected;
            }, Duration.ofSeconds(30), () -> "records on " + topic + ": " + got);
        }
        return got;
    }
}
