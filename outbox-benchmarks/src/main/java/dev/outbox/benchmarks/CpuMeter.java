package dev.outbox.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The CPU a scenario used, split by who used it: this JVM (the Dispatcher, the producer and, embedded, Kafka's
 * broker), the database server ({@link ServerCpu}), and the whole machine from {@code /proc/stat} (both of those,
 * the kernel's loopback networking, and whatever else runs). Started when created; {@link #describe} reads it
 * again. The machine's share answers "is it CPU-bound": busy cores near the core count mean the scenario had no CPU
 * left to overlap more work with. NaN parts (not Linux, a remote server) are said to be unknown. Not thread-safe.
 */
final class CpuMeter {
    private static final Path STAT = Path.of("/proc/stat");
    /** USER_HZ: the unit of /proc/stat on every Linux the benchmark runs on. */
    private static final double TICKS_PER_SECOND = 100.0;

    private final ServerCpu server;
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final long startedNanos = System.nanoTime();
    private final long jvm0 = os.getProcessCpuTime();
    private final double server0;
    private final double machine0 = machineBusySeconds();

    /** @param server the database server's clock, or null when no database takes part */
    CpuMeter(ServerCpu server) {
        this.server = server;
        this.server0 = server == null ? Double.NaN : server.seconds();
    }

    /**
     * "CPU a record: this JVM 3.1 us, the database server 1.9 us, the machine 6.0 us (1.71 of 2 cores busy)" for
     * {@code records} records, from creation until now.
     */
    String describe(long records) {
        double wall = (System.nanoTime() - startedNanos) / 1e9;
        double jvm = (os.getProcessCpuTime() - jvm0) / 1e9;
        double db = server == null ? Double.NaN : server.seconds() - server0;
        double machine = machineBusySeconds() - machine0;
        long n = Math.max(1, records);
        StringBuilder s = new StringBuilder(Report.fmt("CPU a record: this JVM %.1f us", jvm * 1e6 / n));
        if (server != null) {
            s.append(Double.isNaN(db) ? ", the database server unknown"
                    : Report.fmt(", the database server %.1f us", db * 1e6 / n));
        }
        if (Double.isNaN(machine)) {
            s.append(", the machine unknown");
        } else {
            s.append(Report.fmt(", the machine %.1f us (%.2f of %d cores busy)", machine * 1e6 / n,
                    machine / wall, Machine.cores()));
        }
        return s.toString();
    }

    /**
     * Seconds all CPUs spent busy since boot: user, nice, system, irq and softirq from the first line of
     * {@code /proc/stat} (idle, iowait and steal left out); NaN where it cannot be read.
     */
    static double machineBusySeconds() {
        try {
            List<String> lines = Files.readAllLines(STAT);
            String[] f = lines.get(0).trim().split("\\s+");
            if (!f[0].equals("cpu") || f.length < 8) {
                return Double.NaN;
            }
            long busy = Long.parseLong(f[1]) + Long.parseLong(f[2]) + Long.parseLong(f[3]) + Long.parseLong(f[6])
                    + Long.parseLong(f[7]);
            return busy / TICKS_PER_SECOND;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }
}
