package dev.outbox.testservers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A database server run as a child process: started with its output appended to a log file, killed on stop.
 * Not thread-safe (used under a backend's caller's lock).
 */
final class ServerProcess {
    /** File in an instance directory holding the server's pid, so a later run can kill an orphan. */
    static final String PID_FILE = "server.pid";

    private final String name;
    private final Path directory;
    private final Path log;
    private Process process;

    ServerProcess(String name, Path directory, Path log) {
        this.name = name;
        this.directory = directory;
        this.log = log;
    }

    void start(List<String> command) {
        start(command, java.util.Map.of());
    }

    /** Starts {@code command} with {@code environment} added to this JVM's. */
    void start(List<String> command, java.util.Map<String, String> environment) {
        try {
            ProcessBuilder builder = new ProcessBuilder(command);
            builder.environment().putAll(environment);
            builder.directory(directory.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
            process = builder.start();
            Files.writeString(directory.resolve(PID_FILE), Long.toString(process.pid()), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command.get(0), e);
        }
    }

    boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** Fails with the end of the log if the process has exited. */
    void checkAlive() {
        if (process != null && !process.isAlive()) {
            throw new IllegalStateException(name + " exited with code " + process.exitValue() + "; end of " + log
                    + ":\n" + tail(log, 15));
        }
    }

    /** Kills the process (SIGKILL) and waits until it has gone. */
    void kill() {
        if (process == null) {
            return;
        }
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + " (pid " + process.pid() + ") did not exit 30 s after SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while stopping " + name, e);
        }
        process = null;
    }

    /** Stops (SIGSTOP) or continues (SIGCONT) the process and its descendants. */
    void pause(boolean paused) {
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException(name + " is not running");
        }
        signal(paused, process.pid());
    }

    /**
     * Sends SIGSTOP ({@code paused}) or SIGCONT to process {@code pid} and to all its descendants: the parent
     * first when stopping (so it forks no new child meanwhile), last when continuing.
     */
    static void signal(boolean paused, long pid) {
        ProcessHandle root = ProcessHandle.of(pid).orElseThrow(() -> new IllegalStateException("no process " + pid));
        List<String> command = new java.util.ArrayList<>(List.of("kill", paused ? "-STOP" : "-CONT"));
        List<String> children = root.descendants().map(h -> Long.toString(h.pid())).toList();
        if (paused) {
            command.add(Long.toString(pid));
            command.addAll(children);
        } else {
            command.addAll(children);
            command.add(Long.toString(pid));
        }
        try {
            runQuick("signalling process " + pid, command);
        } catch (IllegalStateException e) {
            // A child that exited between the listing and the signal (a backend whose client left, a short-lived
            // worker) is no failure: kill signalled every other one and reports only those.
            String message = e.getMessage() == null ? "" : e.getMessage();
            String output = message.replaceFirst("(?s)^.*? failed with code \\d+: ", "");
            boolean onlyGone = !output.equals(message) && output.lines().allMatch(l -> l.contains("No such process"));
            if (!onlyGone) {
                throw e;
            }
        }
    }

    /** Runs a short system command, failing with its output if it fails. */
    static String runQuick(String what, List<String> command) {
        return runQuick(what, command, java.util.Map.of());
    }

    /** Runs a short system command with {@code environment} added to this JVM's, failing with its output if it fails. */
    static String runQuick(String what, List<String> command, java.util.Map<String, String> environment) {
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
            builder.environment().putAll(environment);
            Process p = builder.start();
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(what + ": " + String.join(" ", command) + " took more than 30 s");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(what + ": " + String.join(" ", command) + " failed with code "
                        + p.exitValue() + ": " + output);
            }
            return output;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command.get(0) + " for " + what, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during " + what, e);
        }
    }

    /** Runs {@code command} to completion (e.g. initialising a data directory), failing with its output. */
    static void run(String what, List<String> command, Path directory, Path log, long timeoutSeconds) {
        try {
            Process p = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(what + " took more than " + timeoutSeconds + " s; see " + log);
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(what + " failed with code " + p.exitValue() + "; end of " + log
                        + ":\n" + tail(log, 15));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command.get(0) + " for " + what, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during " + what, e);
        }
    }

    /** Every port {@link #freePort()} handed out in this JVM: never handed out twice. */
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    /**
     * A TCP port that was free on 127.0.0.1 a moment ago and that no other server of this JVM was given: servers that
     * start at the same time (MySQL and MariaDB, say) could otherwise be given the same just-freed port, and the one
     * that loses the bind would find the other one listening there.
     */
    static int freePort() {
        for (int attempt = 0; attempt < 100; attempt++) {
            int port;
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                port = socket.getLocalPort();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot find a free port", e);
            }
            if (HANDED_OUT.add(port)) {
                return port;
            }
        }
        throw new IllegalStateException("cannot find a free port not handed out before in this JVM");
    }

    static String tail(Path file, int lines) {
        try {
            List<String> all = Files.readAllLines(file, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(cannot read " + file + ": " + e + ")";
        }
    }
}
