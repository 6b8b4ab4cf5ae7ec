package dev.outbox.benchmarks;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The peers benchmark's table ({@link PeerBenchmark}): the latency lines, the highest rate each system sustained,
 * the backlog drains, the crash runs and every system's settings with where each came from.
 */
final class PeerReport {
    private final List<PeerBenchmark.Line> lines;
    private final List<PeerBenchmark.Drain> drains;
    private final List<PeerBenchmark.Crash> crashes;
    private final Map<String, List<String[]>> settings;
    private final BenchmarkOptions options;

    PeerReport(PeerBenchmark b, BenchmarkOptions options) {
        this.lines = b.lines;
        this.drains = b.drains;
        this.crashes = b.crashes;
        this.settings = b.settings;
        this.options = options;
    }

    /** The whole table, as printed and written to results-peers.txt. */
    String render(Instant started, double loadAtStart, List<String> systems) {
        StringBuilder b = new StringBuilder();
        b.append("Side by side: our cursor and WAL harvests, Spring Modulith, Debezium\n");
        b.append(String.format(Locale.ROOT, "command: %s%nstarted: %s, finished: %s%nmachine: %s%n"
                        + "load average at start %.2f, at end %.2f (other builds share this machine)%n",
                options.command, started, Instant.now(), Machine.describe(), loadAtStart, Machine.loadAverage()));
        b.append(String.format(Locale.ROOT, "%,d s measured after %,d s warm-up per line; %d writers; value %d"
                        + " bytes; %d partitions%n%n", options.duration.toSeconds(),
                options.latencyWarmup.toSeconds(), options.writers, options.valueBytes, options.partitions));
        if (!lines.isEmpty()) {
            renderLines(b, systems);
        }
        if (!drains.isEmpty()) {
            b.append("\nBacklog drain (records/s from the first record to the last; Debezium: the slot's backlog"
                    + " after a restart, Modulith: incomplete publications resubmitted at start; start = from its"
                    + " JVM's start to its first record; bare: the cursor read,"
                    + " a bare producer and purge, pipelined, no engine):\n");
            b.append(String.format(Locale.ROOT, "%-9s %10s %10s %12s %8s %6s %11s %6s%n", "system", "records",
                    "seconds", "records/s", "start s", "left", "CPU us/rec", "load"));
            for (PeerBenchmark.Drain d : drains) {
                b.append(String.format(Locale.ROOT, "%-9s %10d %10.2f %12.0f %8s %6d %11.1f %6.2f%n", d.system(),
                        d.records(), d.seconds(), d.rate(), Double.isNaN(d.startSeconds()) ? "-"
                                : String.format(Locale.ROOT, "%.1f", d.startSeconds()), d.left(),
                        d.cpuMicrosPerRecord(), d.load()));
            }
        }
        if (!crashes.isEmpty()) {
            b.append("\nCrash run (publishing JVM SIGKILLed under load, restarted; restart->ready: the peers' new JVM"
                    + " ready, ours the first record committed after the kill arriving):\n");
            b.append(String.format(Locale.ROOT, "%-9s %10s %6s %11s %13s %17s %6s%n", "system", "committed",
                    "lost", "duplicates", "out of order", "restart->ready s", "load"));
            for (PeerBenchmark.Crash c : crashes) {
                b.append(String.format(Locale.ROOT, "%-9s %10d %6d %11d %13d %17.1f %6.2f%n", c.system(),
                        c.committed(), c.lost(), c.duplicates(), c.outOfOrder(), c.restartSeconds(), c.load()));
            }
        }
        b.append("\nSettings (name = value: where it came from):\n");
        settings.forEach((system, s) -> {
            b.append("  ").append(system).append(":\n");
            for (String[] x : s) {
                b.append("    ").append(x[0]).append(" = ").append(x[1]).append(": ").append(x[2]).append('\n');
            }
        });
        return b.toString();
    }

    /** The latency lines and the highest rate each system sustained. */
    private void renderLines(StringBuilder b, List<String> systems) {
        b.append("Latencies in ms. CPU us/rec: CPU time of the run's processes (this JVM with Kafka, the peer's JVM,"
                + " Postgres) per offered record, warm-up included; machine: all of the machine's busy time, other"
                + " builds included.\n");
        b.append(String.format(Locale.ROOT, "%-9s %-9s %10s %17s %21s %11s %8s %11s %12s %6s%n", "rate/s", "system",
                "achieved/s", "commit->ack p50/p99", "commit->consume p50/p99", "consume max", "missing",
                "CPU us/rec", "machine us/rec", "load"));
        List<Integer> rates = options.rates;
        for (int rate : rates) {
            for (String system : systems) {
                for (PeerBenchmark.Line l : lines) {
                    if (l.rate() == rate && l.system().equals(system)) {
                        b.append(String.format(Locale.ROOT,
                                "%-9s %-9s %10.0f %17s %21s %11s %8d %11.0f %12.0f %6.2f%s%n",
                                String.format(Locale.ROOT, "%,d", rate), system, l.achieved(),
                                Double.isNaN(l.ackP50()) ? "n/a" : ms(l.ackP50()) + " / " + ms(l.ackP99()),
                                ms(l.consumeP50()) + " / " + ms(l.consumeP99()), ms(l.consumeMax()), l.missing(),
                                l.processCpuMicrosPerRecord(), l.cpuMicrosPerRecord(), l.load(),
                                l.sustainable() ? "" : "  NOT sustainable"));
                    }
                }
            }
        }
        b.append("\nHighest offered rate sustained (of the rates run):\n");
        for (String system : systems) {
            int best = 0;
            for (PeerBenchmark.Line l : lines) {
                if (l.system().equals(system) && l.sustainable()) {
                    best = Math.max(best, l.rate());
                }
            }
            b.append(String.format(Locale.ROOT, "  %-9s %s%n", system, best == 0 ? "none" : String.format(
                    Locale.ROOT, "%,d records/s", best)));
        }
    }

    private static String ms(double v) {
        return Double.isNaN(v) ? "-" : v >= 100 ? String.format(Locale.ROOT, "%.0f", v)
                : String.format(Locale.ROOT, "%.1f", v);
    }
}
