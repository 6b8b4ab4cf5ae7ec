package dev.outbox.micrometer;

import dev.outbox.Dispatcher;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.InMemoryStore;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Grafana dashboard and the Prometheus alert rules shipped with this module use only metric names the binder
 * registers, as a Prometheus registry exposes them: renaming a meter breaks this test, not the dashboard.
 */
class OutboxMetricsDashboardTest {
    private static final Pattern METRIC = Pattern.compile("\\b(outbox_[a-z0-9_]+)\\b");
    private static final String DASHBOARD = "dev/outbox/micrometer/grafana-dashboard.json";
    private static final String ALERTS = "dev/outbox/micrometer/prometheus-alerts.yml";

    /** The metric names of every sample a scrape of a freshly bound registry shows. */
    /** What a sharded outbox's binder scrapes: every meter, the shard gauges included. */
    private static Set<String> scrapedNames() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        InMemoryStore store = new InMemoryStore();
        store.setShards(2);
        try (Dispatcher dispatcher = Dispatcher.builder(store, new InMemoryBroker()).build();
             OutboxMetrics metrics = new OutboxMetrics(dispatcher, "outbox")) {
            metrics.bindTo(registry);
            Set<String> names = new TreeSet<>();
            for (String line : registry.scrape().split("\n")) {
                if (!line.isBlank() && !line.startsWith("#")) {
                    names.add(line.split("[{ ]", 2)[0]);
                }
            }
            return names;
        } finally {
            registry.close();
        }
    }

    private static Object load(String resource) {
        try (InputStream in = OutboxMetrics.class.getClassLoader().getResourceAsStream(resource)) {
            assertThat(in).as(resource).isNotNull();
            return new Yaml(new SafeConstructor(new LoaderOptions())).load(in); // JSON is YAML, too
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every value of the key {@code key} anywhere in a parsed document. */
    private static void collect(Object node, String key, List<String> out) {
        if (node instanceof Map<?, ?> map) {
            map.forEach((k, v) -> {
                if (key.equals(k) && v instanceof String s) {
                    out.add(s);
                } else {
                    collect(v, key, out);
                }
            });
        } else if (node instanceof List<?> list) {
            list.forEach(item -> collect(item, key, out));
        }
    }

    private static Set<String> metricsIn(List<String> expressions) {
        Set<String> used = new TreeSet<>();
        for (String e : expressions) {
            Matcher m = METRIC.matcher(e);
            while (m.find()) {
                used.add(m.group(1));
            }
        }
        return used;
    }

    @Test
    void theDashboardUsesOnlyRegisteredMetricsAndShowsWhatOnCallNeeds() {
        Object dashboard = load(DASHBOARD);
        List<String> expressions = new ArrayList<>();
        collect(dashboard, "expr", expressions);
        collect(dashboard, "query", expressions); // the template variables' queries
        Set<String> used = metricsIn(expressions);
        Set<String> registered = scrapedNames();

        assertThat(registered).as("the binder's scrape").isNotEmpty();
        assertThat(used).as("metrics the dashboard uses").isNotEmpty();
        assertThat(registered).as("metrics the binder registers, for the dashboard's " + used).containsAll(used);
        assertThat(used).as("rate, lag, backlog, in flight, parked, leader")
                .contains("outbox_records_acknowledged_total", "outbox_lag_seconds", "outbox_backlog",
                        "outbox_records_in_flight", "outbox_parked", "outbox_leader",
                        "outbox_ack_latency_seconds_bucket");
        List<String> titles = new ArrayList<>();
        collect(dashboard, "title", titles);
        assertThat(titles).contains("Leader per instance", "In flight per instance");
    }

    @Test
    void theAlertRulesUseOnlyRegisteredMetricsAndCoverLagReadAgeParkedHeldAndNoLeader() {
        Object rules = load(ALERTS);
        List<String> expressions = new ArrayList<>();
        collect(rules, "expr", expressions);
        Set<String> used = metricsIn(expressions);

        assertThat(scrapedNames()).as("metrics the binder registers, for the alerts' " + used).containsAll(used);
        List<String> alerts = new ArrayList<>();
        collect(rules, "alert", alerts);
        assertThat(alerts).containsExactlyInAnyOrder("OutboxLagHigh", "OutboxHarvestStalled", "OutboxRecordsParked",
                "OutboxRecordsHeld", "OutboxNoLeader", "OutboxShardNoLeader", "OutboxWalSlotRetainsTooMuch");
        assertThat(expressions).anySatisfy(e -> assertThat(e).contains("outbox_lag_seconds").contains(">"))
                .anySatisfy(e -> assertThat(e).contains("outbox_read_age_seconds").contains(">"))
                .anySatisfy(e -> assertThat(e).contains("outbox_retained_bytes").contains("> 1073741824"))
                .anySatisfy(e -> assertThat(e).contains("outbox_parked").contains("> 0"))
                .anySatisfy(e -> assertThat(e).contains("outbox_leader").contains("< 1"))
                .anySatisfy(e -> assertThat(e).contains("outbox_shard_leader").contains("by (outbox, shard)"))
                .anySatisfy(e -> assertThat(e).contains("outbox_records_held").contains("> 0"));
        List<String> durations = new ArrayList<>();
        collect(rules, "for", durations);
        assertThat(durations).contains("1m");
    }

    @Test
    void theMeterNamesConstantListsEveryMeterTheBinderRegisters() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (Dispatcher dispatcher = Dispatcher.builder(new InMemoryStore(), new InMemoryBroker()).build()) {
            new OutboxMetrics(dispatcher, "outbox").bindTo(registry);
            Set<String> names = new TreeSet<>();
            registry.getMeters().forEach(m -> names.add(m.getId().getName()));
            assertThat(names).isEqualTo(new TreeSet<>(OutboxMetrics.METER_NAMES));
        } finally {
            registry.close();
        }
    }

    @Test
    void aShardedOutboxAddsTheShardMetersOncePerShard() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        InMemoryStore store = new InMemoryStore();
        store.setShards(3);
        try (Dispatcher dispatcher = Dispatcher.builder(store, new InMemoryBroker()).build()) {
            new OutboxMetrics(dispatcher, "outbox").bindTo(registry);
            Set<String> names = new TreeSet<>();
            registry.getMeters().forEach(m -> names.add(m.getId().getName()));
            Set<String> expected = new TreeSet<>(OutboxMetrics.METER_NAMES);
            expected.addAll(OutboxMetrics.SHARD_METER_NAMES);
            assertThat(names).isEqualTo(expected);
            assertThat(registry.find(OutboxMetrics.SHARD_LEADER).gauges()).hasSize(3)
                    .extracting(g -> g.getId().getTag(OutboxMetrics.SHARD_TAG)).containsExactlyInAnyOrder("0", "1", "2");
        } finally {
            registry.close();
        }
    }
}
