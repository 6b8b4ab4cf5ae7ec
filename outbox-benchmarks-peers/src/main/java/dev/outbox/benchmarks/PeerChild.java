package dev.outbox.benchmarks;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A peer's child JVM (as the take-over benchmark's {@code LeaderProcess}): the same class path as this JVM, settings
 * as system properties, the database password in {@link LeaderProcess#PASSWORD_VARIABLE}; its standard output is
 * a line protocol read here, its standard error goes to a log file. {@link #kill()} is SIGKILL.
 */
final class PeerChild implements AutoCloseable {
    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final String name;

    PeerChild(String name, String mainClass, Map<String, String> properties, String password, Path log)
            throws IOException {
        this.name = name;
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xms256m");
        cmd.add("-Xmx1g");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        properties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add(mainClass);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put(LeaderProcess.PASSWORD_VARIABLE, password);
        log.toFile().getParentFile().mkdirs();
        pb.redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        this.process = pb.start();
        this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    lines.add(line);
                }
            } catch (IOException e) {
                // the child died
            }
            lines.add("EXITED");
        }, "peer-child-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /** Waits for a line starting with {@code prefix} (other lines are skipped); fails on exit or timeout. */
    String await(String prefix, Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (true) {
            String line = lines.poll(Math.max(1, end - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                throw new IllegalStateException(name + ": no '" + prefix + "' within " + timeout);
            }
            if (line.startsWith(prefix)) {
                return line;
            }
            if (line.equals("EXITED") || line.startsWith("FAILED")) {
                throw new IllegalStateException(name + ": " + line + " (see its log)");
            }
        }
    }

    /** The first line starting with {@code prefix} among those already read (skipping the others), or null. */
    String poll(String prefix) {
        for (String line; (line = lines.poll()) != null; ) {
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        return null;
    }

    void send(String line) throws IOException {
        stdin.write(line + "\n");
        stdin.flush();
    }

    long pid() {
        return process.pid();
    }

    /** SIGKILL, and waits for the process to be gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** Asks the child to quit; kills it if it has not within 30 s. */
    @Override
    public void close() throws Exception {
        if (process.isAlive()) {
            try {
                send("QUIT");
            } catch (IOException e) {
                // gone already
            }
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                kill();
            }
        }
    }

    static File devNull() {
        return new File("/dev/null");
    }
}
