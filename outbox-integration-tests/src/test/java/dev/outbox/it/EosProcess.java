package dev.outbox.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * An {@link ExactlyOnceDispatcherChild} process of {@link ExactlyOnceEndToEndTest} and the thread reading its
 * reports: what it leads, how many records its broker acknowledged without sending them. Its log goes to
 * {@code target/eos-e2e-<run>-<name>.log}.
 */
final class EosProcess {
    final String name;
    private final Process process;
    private final Thread reader;
    private volatile Set<Integer> leads = Set.of();
    private volatile long skipped;
    private volatile boolean ready;
    private volatile boolean stopped;

    /**
     * Launches the process {@code name} of run {@code run} on {@code outbox}; {@code hold}: it waits for
     * {@link #start()}.
     */
    EosProcess(String run, String name, boolean hold, EosOutbox outbox) throws IOException {
        this.name = name;
        List<String> command = List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-Dorg.slf4j.simpleLogger.logFile=" + Path.of("target", "eos-e2e-" + run + "-" + name + ".log")
                        .toAbsolutePath(),
                "-cp", System.getProperty("java.class.path"), ExactlyOnceDispatcherChild.class.getName(),
                name, hold ? "hold" : "start", outbox.bootstrap(), outbox.dispatcherUrl(), EosOutbox.DISPATCHER_USER,
                outbox.leaderTopic(), Integer.toString(outbox.shards()), outbox.transactionalId(),
                outbox.progressTopic());
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put(ExactlyOnceDispatcherChild.PASSWORD_VARIABLE, EosOutbox.DISPATCHER_PASSWORD);
        this.process = pb.start();
        this.reader = new Thread(this::read, "eos-child-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    private void read() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.startsWith(ShardedDispatcherChild.PREFIX)) {
                    System.out.println(name + ": " + line);
                    continue;
                }
                String[] words = line.substring(ShardedDispatcherChild.PREFIX.length()).split(" ");
                switch (words[0]) {
                    case "READY" -> ready = true;
                    case "STOPPED" -> stopped = true;
                    case "SKIPPED" -> skipped = Long.parseLong(words[1]);
                    case "LEADS" -> {
                        Set<Integer> shards = new TreeSet<>();
                        if (!words[1].equals("-")) {
                            for (String s : words[1].split(",")) {
                                shards.add(Integer.parseInt(s));
                            }
                        }
                        leads = Collections.unmodifiableSet(shards);
                    }
                    default -> {
                    }
                }
            }
        } catch (IOException e) {
            // the process was killed
        }
    }

    /** What it reported leading last: shard numbers, {@code 0} for the one leader of an unsharded outbox. */
    Set<Integer> leads() {
        return leads;
    }

    /** Records its broker acknowledged without sending them (already committed to Kafka by a predecessor). */
    long skipped() {
        return skipped;
    }

    boolean ready() {
        return ready;
    }

    /** Tells a held process to start its dispatcher. */
    void start() throws IOException {
        command("START");
    }

    private void command(String command) throws IOException {
        process.getOutputStream().write((command + "\n").getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().flush();
    }

    /** SIGKILL; returns once the process is gone and its last report read. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
        reader.join(5_000);
        leads = Set.of();
    }

    /** Closes its dispatcher (an orderly close) and waits for the process to end; SIGKILL if it does not. */
    void stop() throws InterruptedException {
        if (process.isAlive()) {
            try {
                command("STOP");
            } catch (IOException e) {
                // already gone
            }
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                System.out.println(name + " did not stop within 30 s: killed");
            }
        }
        kill();
    }

    boolean stoppedOrderly() {
        return stopped;
    }

    @Override
    public String toString() {
        return name + leads;
    }
}
