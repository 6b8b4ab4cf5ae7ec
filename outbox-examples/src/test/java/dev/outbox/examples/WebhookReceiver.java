package dev.outbox.examples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.outbox.Header;
import dev.outbox.testkit.ReceivedMessage;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The receiving end of {@link WebhookMessageBroker} for tests: a real HTTP server (the JDK's {@link HttpServer})
 * on a free port of 127.0.0.1 that decodes each {@code POST /hooks/<topic>} back into a message.
 *
 * <p>It answers 204 to a message it keeps, 413 to a body over {@link #MAX_BODY} bytes, the status {@code NNN}
 * to a message whose key is {@code status-NNN}, and never answers a message keyed {@code hang} until closed.
 * Thread-safe.
 */
final class WebhookReceiver implements AutoCloseable {
    static final int MAX_BODY = 1024 * 1024;
    private static final String PATH = "/hooks/";

    private final HttpServer server;
    private final ExecutorService executor = Executors.newFixedThreadPool(8);
    private final Map<String, List<ReceivedMessage>> byTopic = new ConcurrentHashMap<>();
    private final CountDownLatch closing = new CountDownLatch(1);

    private WebhookReceiver() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(executor);
        server.createContext(PATH, this::handle);
        server.start();
    }

    static WebhookReceiver start() {
        try {
            return new WebhookReceiver();
        } catch (IOException e) {
            throw new IllegalStateException("could not start the webhook receiver", e);
        }
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + PATH);
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            byte[] body = exchange.getRequestBody().readAllBytes();
            String topic = decode(exchange.getRequestURI().getRawPath().substring(PATH.length()));
            String key = decode(exchange.getRequestHeaders().getFirst("Outbox-Key"));
            if (body.length > MAX_BODY) {
                exchange.sendResponseHeaders(413, -1);
                return;
            }
            if (key.startsWith("status-")) {
                exchange.sendResponseHeaders(Integer.parseInt(key.substring("status-".length())), -1);
                return;
            }
            if (key.equals("hang")) {
                closing.await(60, TimeUnit.SECONDS);
                exchange.sendResponseHeaders(503, -1);
                return;
            }
            boolean tombstone = "true".equals(exchange.getRequestHeaders().getFirst("Outbox-Tombstone"));
            List<Header> headers = new ArrayList<>();
            for (String field : exchange.getRequestHeaders().getOrDefault("Outbox-Header", List.of())) {
                for (String h : field.split(",")) { // repeated fields may arrive joined by commas
                    int eq = h.indexOf('=');
                    headers.add(eq < 0 ? Header.of(decode(h.trim()), (byte[]) null)
                            : Header.of(decode(h.substring(0, eq).trim()), Base64.getDecoder().decode(h.substring(eq + 1).trim())));
                }
            }
            List<ReceivedMessage> list = byTopic.computeIfAbsent(topic, t -> new ArrayList<>());
            synchronized (list) {
                list.add(new ReceivedMessage(topic, key, tombstone ? null : body, headers));
                list.notifyAll();
            }
            exchange.sendResponseHeaders(204, -1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** What arrived on {@code topic}, once {@code expected} messages did or {@code timeout} passed. */
    List<ReceivedMessage> await(String topic, int expected, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<ReceivedMessage> list = byTopic.computeIfAbsent(topic, t -> new ArrayList<>());
        synchronized (list) {
            long left;
            while (list.size() < expected && (left = deadline - System.nanoTime()) > 0) {
                try {
                    TimeUnit.NANOSECONDS.timedWait(list, left); // the handler notifies on every message
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            return List.copyOf(list);
        }
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        closing.countDown();
        server.stop(0);
        executor.shutdownNow();
    }
}
