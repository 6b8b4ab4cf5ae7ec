package dev.outbox.sidecar;

import dev.outbox.testkit.Await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** The real sidecar jar as a child process, its output in a file. Not thread-safe. */
final class SidecarProcess implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final Process process;
    private final Path log;
    private final int port;

    private SidecarProcess(Process process, Path log, int port) {
        this.process = process;
        this.log = log;
        this.port = port;
    }

    /** The jar the build just packaged. */
    static Path jar() {
        String jar = System.getProperty("outbox.sidecar.jar");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("system property outbox.sidecar.jar must name the packaged jar: " + jar);
        }
        return Path.of(jar);
    }

    /** Starts {@code java -jar outbox-sidecar.jar --config <config>} with {@code env} added to the environment. */
    static SidecarProcess start(Path config, Path log, int port, Map<String, String> env) {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx192m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar().toString(),
                "--config", config.toString()));
        ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        b.environment().putAll(env);
        try {
            return new SidecarProcess(b.start(), log, port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Runs {@code java -jar outbox-sidecar.jar <args>} to its end, standard output to {@code out} and standard error to
     * {@code err}; returns its exit status.
     */
    static int command(List<String> args, Path out, Path err, Map<String, String> env, Duration timeout) {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx192m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar().toString()));
        command.addAll(args);
        return run(command, out, err, env, timeout);
    }

    /** Runs {@code command} to its end, standard output to {@code out}, standard error to {@code err}. */
    static int run(List<String> command, Path out, Path err, Map<String, String> env, Duration timeout) {
        ProcessBuilder b = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        b.environment().putAll(env);
        try {
            Process p = b.start();
            if (!p.waitFor(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("did not exit within " + timeout + ": " + command);
            }
            return p.exitValue();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Starts {@code command} (e.g. the distribution's launcher) as the sidecar, its output in {@code log}. */
    static SidecarProcess startCommand(List<String> command, Path log, int port, Map<String, String> env) {
        ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        b.environment().putAll(env);
        try {
            return new SidecarProcess(b.start(), log, port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs the sidecar until it exits (it must, within {@code timeout}); returns its exit status. */
    static int runToExit(Path config, Path log, Map<String, String> env, Duration timeout) {
        try (SidecarProcess p = start(config, log, 0, env)) {
            return p.awaitExit(timeout);
        }
    }

    /**
     * A port free now, below Linux's ephemeral range (32768-60999): a port the kernel hands out for {@code bind(0)} may
     * be taken by any outgoing connection (a Kafka or JDBC client's) before the sidecar binds it, which a clean-clone
     * run met as "Address already in use".
     */
    static int freePort() {
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = 20_000 + random.nextInt(12_000);
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new java.net.InetSocketAddress(port));
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IllegalStateException("no free port between 20000 and 32000 after 200 tries");
    }

    int port() {
        return port;
    }

    String log() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    void awaitLog(String text, Duration timeout) {
        Await.untilOrFail(() -> log().contains(text) || !process.isAlive() && log().contains(text), timeout,
                () -> "log line '" + text + "'; alive " + process.isAlive() + ", log:\n" + log());
    }

    /** Waits until GET {@code path} answers 200 with a body containing {@code text}. */
    void awaitHttp(String path, String text, Duration timeout) {
        Await.untilOrFail(() -> {
            if (!process.isAlive()) {
                throw new AssertionError("the sidecar exited with " + process.exitValue() + ":\n" + log());
            }
            try {
                HttpResponse<String> r = get(path, Map.of());
                return r.statusCode() == 200 && r.body().contains(text);
            } catch (UncheckedIOException e) {
                return false;
            }
        }, timeout, () -> "GET " + path + " with '" + text + "'; log:\n" + log());
    }

    HttpResponse<String> get(String path, Map<String, String> headers) {
        return get(port, path, headers);
    }

    /** GET {@code path} on {@code port} of 127.0.0.1 (the sidecar's other port, when it has two). */
    static HttpResponse<String> get(int port, String path, Map<String, String> headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET();
        headers.forEach(b::header);
        return send(b.build());
    }

    HttpResponse<String> post(String path, String json, Map<String, String> headers) {
        return post(port, path, json, headers);
    }

    /**
     * POST {@code body} to {@code path} on {@code port} of 127.0.0.1 (the sidecar's other port, when it has two), as
     * JSON unless {@code headers} name another {@code Content-Type}.
     */
    static HttpResponse<String> post(int port, String path, String body, Map<String, String> headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofString(body));
        if (headers.keySet().stream().noneMatch("Content-Type"::equalsIgnoreCase)) {
            b.header("Content-Type", "application/json");
        }
        headers.forEach(b::header);
        return send(b.build());
    }

    private static HttpResponse<String> send(HttpRequest request) {
        try {
            return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** SIGTERM. */
    void terminate() {
        process.destroy();
    }

    /** SIGKILL. */
    void kill() {
        process.destroyForcibly();
    }

    int awaitExit(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError("the sidecar did not exit within " + timeout + "; log:\n" + log());
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
