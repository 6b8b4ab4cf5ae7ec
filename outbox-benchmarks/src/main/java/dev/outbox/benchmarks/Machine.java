package dev.outbox.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** What the benchmark ran on, read from the JVM and {@code /proc}. Static helpers only. */
final class Machine {
    private Machine() {
    }

    static int cores() {
        return Runtime.getRuntime().availableProcessors();
    }

    static String cpu() {
        for (String line : lines("/proc/cpuinfo")) {
            if (line.startsWith("model name")) {
                return line.substring(line.indexOf(':') + 1).trim();
            }
        }
        return System.getProperty("os.arch");
    }

    /** Total memory in MiB, or -1 if unknown. */
    static long memoryMiB() {
        for (String line : lines("/proc/meminfo")) {
            if (line.startsWith("MemTotal:")) {
                String kb = line.replaceAll("[^0-9]", "");
                return Long.parseLong(kb) / 1024;
            }
        }
        return -1;
    }

    /** The 1-minute load average, or -1 if unknown. */
    static double loadAverage() {
        List<String> l = lines("/proc/loadavg");
        if (l.isEmpty()) {
            return -1;
        }
        return Double.parseDouble(l.get(0).split("\\s+")[0]);
    }

    static String os() {
        return System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                + System.getProperty("os.arch");
    }

    static String java() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
    }

    static long maxHeapMiB() {
        return Runtime.getRuntime().maxMemory() / (1024 * 1024);
    }

    static String describe() {
        return String.format(Locale.ROOT, "%d cores (%s), %.1f GiB memory, %s", cores(), cpu(),
                memoryMiB() / 1024.0, os());
    }

    private static List<String> lines(String file) {
        try {
            return Files.readAllLines(Path.of(file));
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }
}
