package dev.outbox.benchmarks;

import dev.outbox.Dispatcher;
import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.micrometer.OutboxMetrics;
import dev.outbox.opentelemetry.TracingMessageDecorator;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The cost of observability on the drain: in one run, on the same servers, the Dispatcher drains the same
 * backlog alternately without and with observability — {@code OutboxMetrics} bound to a Prometheus registry
 * (percentile histograms included) and every row carrying the {@code traceparent} header that
 * {@code TracingMessageDecorator} writes — and the medians are compared. Also times the decorator itself on the
 * writer's side. Takes the main benchmark's flags ({@code --rows}, {@code --repeat}, {@code --database}, …).
 *
 * <pre>
 * BENCH_MAIN=ObservabilityBenchmark ./bench.sh --rows 200000 --repeat 3 --warmup-rows 50000
 * </pre>
 */
public final class ObservabilityBenchmark {
    private ObservabilityBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        BenchmarkOptions options;
        try {
            options = BenchmarkOptions.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        String text = run(options);
        System.out.print(text);
        System.out.flush();
        System.exit(0); // embedded servers and Kafka's threads would keep the JVM alive
    }

    /** Runs the comparison, writes observability.txt to --out and returns its text. */
    static String run(BenchmarkOptions options) throws Exception {
        List<Double> off = new ArrayList<>();
        List<Double> on = new ArrayList<>();
        double decorateMicros;
        try (OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
                // A processor that exports nowhere: the SDK records spans only when some processor wants them.
                .setTracerProvider(SdkTracerProvider.builder()
                        .addSpanProcessor(SimpleSpanProcessor.create(SpanExporter.composite())).build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance())).build();
             BenchEnvironment env = new BenchEnvironment(options)) {
            TracingMessageDecorator decorator = TracingMessageDecorator.of(otel);
            decorateMicros = decorateMicros(otel, decorator);
            Header traceparent = traceparent(otel, decorator);
            ThroughputScenarios throughput = new ThroughputScenarios(env, options);
            if (options.warmupRows > 0) {
                Progress.say("warm-up: %,d rows, without and with observability (not recorded) ...",
                        options.warmupRows);
                throughput.drain(options.warmupRows, options.seed);
                observed(env, throughput, options.warmupRows, options.seed, traceparent);
                ThroughputScenarios.settle();
            }
            for (int r = 1; r <= options.repeat; r++) {
                long seed = options.seed + r;
                ThroughputScenarios.Run plain = throughput.drain(options.rows, seed);
                Progress.say("drain, run %d: %,.0f records/s", r, plain.rate());
                off.add(plain.rate());
                ThroughputScenarios.settle();
                ThroughputScenarios.Run observed = observed(env, throughput, options.rows, seed, traceparent);
                Progress.say("drain with metrics and tracing, run %d: %,.0f records/s", r, observed.rate());
                on.add(observed.rate());
                ThroughputScenarios.settle();
            }
        }
        double offMedian = Report.median(off);
        double onMedian = Report.median(on);
        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, "Observability cost on the drain (%s, %,d rows, runs alternate)%n",
                options.database, options.rows));
        out.append(String.format(Locale.ROOT, "  %-48s %s%n", "drain, no observability", rates(off, offMedian)));
        out.append(String.format(Locale.ROOT, "  %-48s %s%n", "drain, OutboxMetrics + traceparent on every row",
                rates(on, onMedian)));
        out.append(String.format(Locale.ROOT, "  %-48s %+.1f %% (goal: under 3 %%)%n", "cost (1 - on / off, medians)",
                100 * (1 - onMedian / offMedian)));
        out.append(String.format(Locale.ROOT, "  %-48s %.2f us per message (writer's thread, span current)%n",
                "TracingMessageDecorator.decorate", decorateMicros));
        Files.createDirectories(options.out);
        Files.writeString(options.out.resolve("observability.txt"), out.toString(), StandardCharsets.UTF_8);
        return out.toString();
    }

    private static ThroughputScenarios.Run observed(BenchEnvironment env, ThroughputScenarios throughput, int rows,
                                                    long seed, Header traceparent) throws InterruptedException {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try {
            ThroughputScenarios.Run run = throughput.drain("drain+observability", rows, seed, (Dispatcher d) -> {
                env.database().addHeader(traceparent.name(), traceparent.value());
                new OutboxMetrics(d, BenchEnvironment.TABLE).bindTo(registry);
            });
            double acknowledged = registry.get(OutboxMetrics.RECORDS_ACKNOWLEDGED).counters().stream()
                    .mapToDouble(c -> c.count()).sum();
            if (acknowledged < run.records()) {
                throw new IllegalStateException("the binder counted " + acknowledged + " acknowledgements of "
                        + run.records());
            }
            registry.scrape(); // what a Prometheus server would do, once at least
            return run;
        } finally {
            registry.close();
        }
    }

    /** The traceparent header the decorator writes for a message written inside a span. */
    private static Header traceparent(OpenTelemetrySdk otel, TracingMessageDecorator decorator) {
        Span span = otel.getTracer("bench").spanBuilder("write").startSpan();
        try (Scope ignored = span.makeCurrent()) {
            return decorator.decorate(OutboxMessage.of("t", "k", "v")).headers().stream()
                    .filter(h -> h.name().equals("traceparent")).findFirst().orElseThrow();
        } finally {
            span.end();
        }
    }

    /** Mean time of one decoration, with a span current, after a warm-up. */
    private static double decorateMicros(OpenTelemetrySdk otel, TracingMessageDecorator decorator) {
        OutboxMessage message = OutboxMessage.builder("orders", "key-1").value(new byte[100]).header("type", "x")
                .build();
        Span span = otel.getTracer("bench").spanBuilder("write").startSpan();
        long sink = 0;
        long nanos = 0;
        int n = 200_000;
        try (Scope ignored = span.makeCurrent()) {
            for (int round = 0; round < 2; round++) { // the first round warms up
                long started = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    sink += decorator.decorate(message).headers().size();
                }
                nanos = System.nanoTime() - started;
            }
        } finally {
            span.end();
        }
        if (sink == 0) {
            throw new IllegalStateException("nothing decorated");
        }
        return nanos / 1e3 / n;
    }

    private static String rates(List<Double> rates, double median) {
        StringBuilder s = new StringBuilder();
        for (double r : rates) {
            s.append(String.format(Locale.ROOT, "%,9.0f", r));
        }
        return s.append(String.format(Locale.ROOT, "  median %,9.0f records/s", median)).toString();
    }
}
