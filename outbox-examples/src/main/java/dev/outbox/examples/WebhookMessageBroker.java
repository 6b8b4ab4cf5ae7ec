package dev.outbox.examples;

import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link MessageBroker} that delivers each record as an HTTP {@code POST} to a webhook, on the JDK's
 * {@link HttpClient} — an example of a custom adapter, proven by {@code WebhookMessageBrokerContractTest}.
 *
 * <p>The request goes to {@code <endpoint>/<topic>} with the value as body ({@code application/octet-stream}) and
 * the rest as headers: {@code Outbox-Key} (URL-encoded), {@code Outbox-Id} (the row id: receivers deduplicate by
 * it, since delivery is at-least-once), {@code Outbox-Created-At}, {@code Outbox-Tombstone: true} for a null value,
 * and one {@code Outbox-Header: <URL-encoded name>[=<base64 value>]} per message header, in order.
 *
 * <p>Outcomes: a 2xx response acknowledges the record; 408, 429 and 5xx responses, timeouts and I/O errors are
 * retriable; any other status (4xx: the receiver will never take this record) is permanent, so the dispatcher
 * parks the record. Every send completes within {@code connectTimeout + requestTimeout} (plus the wait for a
 * free request slot, bounded by {@code requestTimeout}). A request that timed out may still have reached the
 * receiver, which is one more reason to deduplicate by {@code Outbox-Id}.
 *
 * <p>Thread-safe. {@link #close(Duration)} waits for pending requests, then fails and cancels those still running.
 */
public final class WebhookMessageBroker implements MessageBroker {
    private final URI endpoint;
    private final Duration requestTimeout;
    private final ExecutorService executor;
    private final HttpClient client;
    private final Semaphore slots;
    private final Set<CompletableFuture<Void>> pending = ConcurrentHashMap.newKeySet();
    private final Object lock = new Object();
    private boolean closed;

    private WebhookMessageBroker(Builder b) {
        this.endpoint = b.endpoint;
        this.requestTimeout = b.requestTimeout;
        AtomicInteger threads = new AtomicInteger();
        this.executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "webhook-http-" + threads.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.client = HttpClient.newBuilder().connectTimeout(b.connectTimeout).executor(executor).build();
        this.slots = new Semaphore(b.maxConcurrentRequests);
    }

    /** Starts a builder for a broker posting to {@code endpoint} (an {@code http} or {@code https} URI). */
    public static Builder builder(URI endpoint) {
        return new Builder(endpoint);
    }

    @Override
    public CompletionStage<Void> send(OutboxRecord record) {
        HttpRequest request = request(record);
        try {
            if (!slots.tryAcquire(requestTimeout.toNanos(), TimeUnit.NANOSECONDS)) {
                return CompletableFuture.failedFuture(DeliveryException.retriable("no free request slot within "
                        + requestTimeout + " for record " + record.id(), null));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(DeliveryException.retriable("interrupted", e));
        }
        CompletableFuture<Void> result = new CompletableFuture<>();
        synchronized (lock) { // a send never slips past close()
            if (closed) {
                slots.release();
                return CompletableFuture.failedFuture(DeliveryException.retriable("webhook broker is closed", null));
            }
            pending.add(result);
        }
        CompletableFuture<HttpResponse<Void>> http = post(request);
        http.whenComplete((response, error) -> {
            if (error != null) {
                result.completeExceptionally(DeliveryException.retriable("POST " + request.uri() + " failed: "
                        + error, error));
            } else {
                complete(result, response.statusCode(), request.uri());
            }
        });
        result.whenComplete((ok, error) -> {
            pending.remove(result);
            slots.release();
            http.cancel(true); // no effect once the response is in; aborts the exchange if close() failed it
        });
        return result;
    }

    private CompletableFuture<HttpResponse<Void>> post(HttpRequest request) {
        try {
            return client.sendAsync(request, HttpResponse.BodyHandlers.discarding());
        } catch (RuntimeException e) { // a client that cannot even start the exchange
            return CompletableFuture.failedFuture(e);
        }
    }

    // tag::classify[]
    private static void complete(CompletableFuture<Void> result, int status, URI uri) {
        if (status >= 200 && status < 300) {
            result.complete(null);
        } else if (status == 408 || status == 429 || status >= 500) {
            result.completeExceptionally(DeliveryException.retriable("POST " + uri + " answered " + status, null));
        } else {
            result.completeExceptionally(DeliveryException.permanent("POST " + uri + " answered " + status
                    + ": the receiver will not take this record", null));
        }
    }
    // end::classify[]

    private HttpRequest request(OutboxRecord record) {
        byte[] value = record.message().value();
        HttpRequest.Builder b = HttpRequest.newBuilder(endpoint.resolve(encode(record.topic())))
                .timeout(requestTimeout)
                .header("Content-Type", "application/octet-stream")
                .header("Outbox-Key", encode(record.key()))
                .header("Outbox-Id", Long.toString(record.id()))
                .header("Outbox-Created-At", record.createdAt().toString())
                .POST(HttpRequest.BodyPublishers.ofByteArray(value == null ? new byte[0] : value));
        if (value == null) {
            b.header("Outbox-Tombstone", "true");
        }
        for (Header h : record.message().headers()) {
            byte[] v = h.value();
            b.header("Outbox-Header", encode(h.name())
                    + (v == null ? "" : "=" + Base64.getEncoder().encodeToString(v)));
        }
        return b.build();
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    @Override
    public boolean flush(Duration timeout) {
        try {
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
                    .handle((ok, error) -> null) // a failed send is still a completed one
                    .get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("unreachable", e);
        }
    }

    @Override
    public void close(Duration timeout) {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        flush(timeout);
        for (CompletableFuture<Void> f : List.copyOf(pending)) {
            f.completeExceptionally(DeliveryException.retriable("webhook broker closed before the receiver"
                    + " answered", null));
        }
        if (client instanceof AutoCloseable c) { // Java 21+: the client can be closed, which ends its own thread
            try {
                c.close();
            } catch (Exception e) {
                // best effort: every send has completed already
            }
        }
        executor.shutdownNow();
    }

    /** Builds a {@link WebhookMessageBroker}; not thread-safe. */
    public static final class Builder {
        private final URI endpoint;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration requestTimeout = Duration.ofSeconds(10);
        private int maxConcurrentRequests = 64;

        private Builder(URI endpoint) {
            Objects.requireNonNull(endpoint, "endpoint");
            if (!"http".equals(endpoint.getScheme()) && !"https".equals(endpoint.getScheme())) {
                throw new IllegalArgumentException("endpoint must be an http or https URI, was " + endpoint);
            }
            String path = endpoint.getPath() == null || endpoint.getPath().isEmpty() ? "/" : endpoint.getPath();
            this.endpoint = endpoint.resolve(path.endsWith("/") ? path : path + "/"); // so that topics append
        }

        /** Longest wait for a TCP connection; 5 s by default. */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = positive("connectTimeout", timeout);
            return this;
        }

        /** Longest wait for a response (and for a free request slot); 10 s by default. */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive("requestTimeout", timeout);
            return this;
        }

        /** Most requests in flight at once, so a backlog does not open a thousand connections; 64 by default. */
        public Builder maxConcurrentRequests(int max) {
            if (max < 1) {
                throw new IllegalArgumentException("maxConcurrentRequests must be at least 1, was " + max);
            }
            this.maxConcurrentRequests = max;
            return this;
        }

        public WebhookMessageBroker build() {
            return new WebhookMessageBroker(this);
        }

        private static Duration positive(String name, Duration d) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, was " + d);
            }
            return d;
        }
    }
}
