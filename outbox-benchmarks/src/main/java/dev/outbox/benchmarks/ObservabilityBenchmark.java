package dev.outbox.benchmarks;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherObserver;
import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
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
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;

/**
 * The cost of observability on the drain: in one run, on the same servers, the Dispatcher drains the same
 * backlog in turn without observability, with {@code OutboxMetrics} bound to a Prometheus registry (percentile
 * histograms included), with the binder and every row carrying the {@code traceparent} header that
 * {@code TracingMessageDecorator} writes, and — the control — with the binder and every value longer by as many
 * bytes as that header's name and value, so that the header's cost can be told from its bytes'. The rows are written
 * before each drain's clock starts: the decorator's own cost, on the writer's thread, is timed apart. Reported: the
 * rates (medians, and the cost of each run against the run without observability just before it), and the CPU time
 * per record of this JVM (dispatcher, producer and the in-process Kafka broker) and of the Postgres server's
 * processes (see {@link ServerCpu}), which on a busy machine say more than the rates.
 *
 * <pre>
 * ./bench.sh observability --rows 300000 --repeat 5 --warmup-rows 100000
 * </pre>
 */
public final class ObservabilityBenchmark {
    private ObservabilityBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        BenchmarkOptions options;
        try {
            options = BenchmarkOptions.parse(args);
        } catch (picocli.CommandLine.ParameterException e) {
            System.err.println(e.getMessage() + "; ./bench.sh --help lists every option");
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
        double decorateMicros;
        double binderNanos = binderNanosPerRecord();
        List<Variant> variants;
        try (OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
                // A processor that exports nowhere: the SDK records spans only when some processor wants them.
                .setTracerProvider(SdkTracerProvider.builder()
                        .addSpanProcessor(SimpleSpanProcessor.create(SpanExporter.composite())).build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance())).build();
             BenchEnvironment env = new BenchEnvironment(options)) {
            TracingMessageDecorator decorator = TracingMessageDecorator.of(otel);
            decorateMicros = decorateMicros(otel, decorator);
            Header traceparent = traceparent(otel, decorator);
            int headerBytes = traceparent.name().length() + traceparent.value().length;
            variants = List.of(
                    new Variant("drain, no observability", false, null, 0),
                    new Variant("drain, OutboxMetrics", true, null, 0),
                    new Variant("drain, OutboxMetrics + traceparent on every row", true, traceparent, 0),
                    // The control: as many more bytes per row as the header's name and value, in the value.
                    new Variant("drain, OutboxMetrics + " + headerBytes + " more value bytes", true, null,
                            headerBytes));
            ThroughputScenarios throughput = new ThroughputScenarios(env, options);
            if (options.warmupRows > 0) {
                Progress.say("warm-up: %,d rows, without and with observability (not recorded) ...",
                        options.warmupRows);
                throughput.drain(options.warmupRows, options.seed);
                observed(throughput, options.warmupRows, options.seed, traceparent, 0, new CpuClock(null));
                ThroughputScenarios.settle();
            }
            ServerCpu server = ServerCpu.of(env.database());
            for (int r = 1; r <= options.repeat; r++) {
                long seed = options.seed + r;
                for (Variant v : variants) {
                    CpuClock cpu = new CpuClock(server);
                    ThroughputScenarios.Run run = v.metrics
                            ? observed(throughput, options.rows, seed, v.header, v.extraValueBytes, cpu)
                            : throughput.drain("drain", options.rows, seed, null, d -> cpu.start());
                    v.add(run, cpu, r);
                    ThroughputScenarios.settle();
                }
            }
        }
        Variant off = variants.get(0);
        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, "Observability cost on the drain (%s, %,d rows, runs alternate)%n",
                options.database, options.rows));
        for (Variant v : variants) {
            out.append(String.format(Locale.ROOT, "  %-48s %s%n", v.label, rates(v.rates, Report.median(v.rates))));
        }
        out.append(String.format(Locale.ROOT, "  %-48s metrics %+.1f %%, metrics + tracing %+.1f %% (goal: under 3 %%),"
                        + " metrics + longer values %+.1f %%%n", "rate cost (1 - on / off, medians)",
                variants.get(1).rateCost(off), variants.get(2).rateCost(off), variants.get(3).rateCost(off)));
        out.append(String.format(Locale.ROOT, "  %-48s %s%n", "rate cost per run (1 - on / off, same run)",
                variants.get(1).runCosts(off, "metrics") + "; " + variants.get(2).runCosts(off, "metrics + tracing")));
        out.append(cpuLine("CPU of this JVM per record, medians", variants, v -> v.jvmCpu));
        out.append(cpuLine("CPU of the Postgres server per record, medians", variants, v -> v.serverCpu));
        out.append(cpuLine("CPU of both per record, medians", variants, Variant::totalCpu));
        out.append(String.format(Locale.ROOT, "  %-48s %.0f ns per record (sent + acknowledged, one thread)%n",
                "OutboxMetrics' observer alone", binderNanos));
        out.append(String.format(Locale.ROOT, "  %-48s %.2f us per message (writer's thread, span current)%n",
                "TracingMessageDecorator.decorate", decorateMicros));
        Files.createDirectories(options.out);
        Files.writeString(options.out.resolve("observability.txt"), out.toString(), StandardCharsets.UTF_8);
        return out.toString();
    }

    /** One way of running the drain, and what its runs measured. Not thread-safe. */
    private static final class Variant {
        final String label;
        final boolean metrics;
        final Header header;
        final int extraValueBytes;
        final List<Double> rates = new ArrayList<>();
        final List<Double> jvmCpu = new ArrayList<>();
        final List<Double> serverCpu = new ArrayList<>();

        Variant(String label, boolean metrics, Header header, int extraValueBytes) {
            this.label = label;
            this.metrics = metrics;
            this.header = header;
            this.extraValueBytes = extraValueBytes;
        }

        void add(ThroughputScenarios.Run run, CpuClock cpu, int r) {
            rates.add(run.rate());
            jvmCpu.add(cpu.microsPer(run.records()));
            serverCpu.add(cpu.serverMicrosPer(run.records()));
            Progress.say("%s, run %d: %,.0f records/s, %.1f us CPU per record in this JVM, %.1f us in Postgres; %s",
                    label, r, run.rate(), jvmCpu.get(jvmCpu.size() - 1), serverCpu.get(serverCpu.size() - 1),
                    run.breakdown());
        }

        List<Double> totalCpu() {
            List<Double> total = new ArrayList<>();
            for (int i = 0; i < jvmCpu.size(); i++) {
                total.add(jvmCpu.get(i) + serverCpu.get(i));
            }
            return total;
        }

        double rateCost(Variant off) {
            return 100 * (1 - Report.median(rates) / Report.median(off.rates));
        }

        String runCosts(Variant off, String name) {
            StringBuilder s = new StringBuilder(name);
            for (int i = 0; i < rates.size(); i++) {
                s.append(String.format(Locale.ROOT, " %+.1f", 100 * (1 - rates.get(i) / off.rates.get(i))));
            }
            return s.append(" %").toString();
        }
    }

    private static String cpuLine(String title, List<Variant> variants,
                                  java.util.function.Function<Variant, List<Double>> values) {
        double off = Report.median(values.apply(variants.get(0)));
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "  %-48s off %.2f", title, off));
        String[] names = {"metrics", "metrics + tracing", "metrics + longer values"};
        for (int i = 1; i < variants.size(); i++) {
            double m = Report.median(values.apply(variants.get(i)));
            s.append(String.format(Locale.ROOT, ", %s %.2f (%+.1f %%)", names[i - 1], m, 100 * (m / off - 1)));
        }
        return s.append(" us").append(System.lineSeparator()).toString();
    }

    /** The drain with the binder bound and, unless {@code traceparent} is null, that header on every row. */
    private static ThroughputScenarios.Run observed(ThroughputScenarios throughput, int rows, long seed,
                                                    Header traceparent, int extraValueBytes, CpuClock cpu)
            throws InterruptedException {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        java.util.concurrent.atomic.AtomicInteger withHeader = new java.util.concurrent.atomic.AtomicInteger();
        try {
            ThroughputScenarios.Run run = throughput.drain("drain+observability", rows, seed, traceparent,
                    extraValueBytes, (Dispatcher d) -> {
                new OutboxMetrics(d, BenchEnvironment.TABLE).bindTo(registry);
                if (traceparent != null) {
                    // Checks the first record sent, then leaves: the traced drain runs with the same observers as
                    // the metrics-only one, so that only the rows differ.
                    d.addObserver(new DispatcherObserver() {
                        @Override
                        public void sent(OutboxRecord record) {
                            if (record.message().headers().contains(traceparent)) {
                                withHeader.incrementAndGet();
                            }
                            d.removeObserver(this);
                        }
                    });
                }
                cpu.start();
            });
            if (traceparent != null && withHeader.get() == 0) {
                throw new IllegalStateException("the backlog's records did not carry " + traceparent);
            }
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

    /**
     * The binder's own cost per record, without I/O: the observer it registers is called as the engine calls it
     * for one record (sent, then acknowledged with its two durations), a million times after a warm-up.
     */
    private static double binderNanosPerRecord() {
        DispatcherObserver[] observer = new DispatcherObserver[1];
        Dispatcher capturing = new Dispatcher() {
            @Override
            public void start() {
            }

            @Override
            public void close() {
            }

            @Override
            public void await() {
            }

            @Override
            public State state() {
                return State.RUNNING;
            }

            @Override
            public boolean isLeader() {
                return true;
            }

            @Override
            public Optional<UUID> leaderId() {
                return Optional.empty();
            }

            @Override
            public int inFlightRecords() {
                return 0;
            }

            @Override
            public int inFlightKeys() {
                return 0;
            }

            @Override
            public DispatcherHealth health() {
                return DispatcherHealth.builder(DispatcherHealth.Status.STANDBY).build();
            }

            @Override
            public void addObserver(DispatcherObserver o) {
                observer[0] = o;
            }

            @Override
            public void removeObserver(DispatcherObserver o) {
            }
        };
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try {
            new OutboxMetrics(capturing, BenchEnvironment.TABLE).bindTo(registry);
            OutboxRecord record = new OutboxRecord(1, Instant.now(), OutboxMessage.of("orders", "key-1", "v"), 0,
                    UUID.randomUUID());
            Duration sendToAck = Duration.ofMillis(3);
            Duration commitToAck = Duration.ofMillis(25);
            int n = 1_000_000;
            long nanos = 0;
            for (int round = 0; round < 3; round++) { // the first rounds warm up
                long started = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    observer[0].sent(record);
                    observer[0].acknowledged(record, sendToAck, commitToAck);
                }
                nanos = System.nanoTime() - started;
            }
            return (double) nanos / n;
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

    /**
     * CPU time of this whole JVM (dispatcher, producer, in-process Kafka broker) and of the Postgres server (when
     * it is a local process) from {@link #start()} on. The span includes the end of the drain: the dispatcher's
     * close, the last purge. Not thread-safe.
     */
    private static final class CpuClock {
        private final com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        private final ServerCpu server;
        private long started;
        private double serverStarted;

        CpuClock(ServerCpu server) {
            this.server = server;
        }

        void start() {
            started = os.getProcessCpuTime();
            serverStarted = server == null ? Double.NaN : server.seconds();
        }

        double microsPer(long records) {
            return records == 0 ? Double.NaN : (os.getProcessCpuTime() - started) / 1e3 / records;
        }

        double serverMicrosPer(long records) {
            return records == 0 || server == null ? Double.NaN : (server.seconds() - serverStarted) * 1e6 / records;
        }
    }

    private static String rates(List<Double> rates, double median) {
        StringBuilder s = new StringBuilder();
        for (double r : rates) {
            s.append(String.format(Locale.ROOT, "%,9.0f", r));
        }
        return s.append(String.format(Locale.ROOT, "  median %,9.0f records/s", median)).toString();
    }
}
