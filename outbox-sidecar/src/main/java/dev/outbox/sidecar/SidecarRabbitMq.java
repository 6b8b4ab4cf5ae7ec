package dev.outbox.sidecar;

import com.rabbitmq.client.AuthenticationFailureException;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.impl.DefaultExceptionHandler;

import javax.net.ssl.SSLContext;
import java.net.URI;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code sidecar.rabbitmq}: the connection every outbox's {@code RabbitMqMessageBroker} is built on, checked the way
 * the Kafka section is (every bad value names its key; the password, inline or from a file, is never shown), and the
 * start-up check that the node accepts a connection. Stateless.
 */
final class SidecarRabbitMq {
    private static final String PREFIX = "sidecar.rabbitmq";
    private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

    private SidecarRabbitMq() {
    }

    /**
     * The connection factory of {@code r} (its {@code uri}, or its {@code host} and the rest).
     *
     * @throws SidecarConfigException naming the first bad key: a URI that is not an AMQP one, {@code uri} together
     *                                with {@code host}, {@code port} or {@code virtual-host}, a port out of range, a
     *                                password both inline and in a file, a start-up timeout that is not positive
     */
    static ConnectionFactory factory(SidecarRabbitMqProperties r, Secrets secrets) {
        String password = secrets.read(PREFIX + ".password", r.getPassword(), PREFIX + ".password-file",
                r.getPasswordFile());
        ConnectionFactory f = new ConnectionFactory();
        if (r.getUri() != null && !r.getUri().isBlank()) {
            refusedWithUri("host", r.getHost());
            refusedWithUri("port", r.getPort());
            refusedWithUri("virtual-host", r.getVirtualHost());
            String uri = r.getUri().strip();
            try {
                f.setUri(uri);
            } catch (Exception e) {
                // Not the client's message: it may quote the URI, password included.
                throw new SidecarConfigException(PREFIX + ".uri", uri, "not an AMQP URI (" + e.getClass()
                        .getSimpleName() + "); write amqp://user:password@host:5672/vhost or amqps://...", null);
            }
            if ("amqps".equals(URI.create(uri).getScheme().toLowerCase(Locale.ROOT))) {
                // The client's amqps default checks the JVM's trust store, not the host name: check both.
                try {
                    f.useSslProtocol(SSLContext.getDefault());
                } catch (NoSuchAlgorithmException e) {
                    throw new SidecarConfigException(PREFIX + ".uri", uri, "no TLS in this JVM: " + e.getMessage(),
                            e);
                }
                f.enableHostnameVerification();
            }
        } else {
            f.setHost(r.getHost().strip());
            if (r.getPort() != null) {
                if (r.getPort() < 1 || r.getPort() > 65535) {
                    throw new SidecarConfigException(PREFIX + ".port", String.valueOf(r.getPort()), "a port is 1 to"
                            + " 65535", null);
                }
                f.setPort(r.getPort());
            }
            if (r.getVirtualHost() != null) {
                f.setVirtualHost(r.getVirtualHost());
            }
        }
        if (r.getUsername() != null) {
            f.setUsername(r.getUsername());
        }
        if (password != null) {
            f.setPassword(password);
        }
        Duration timeout = r.getStartupTimeout();
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new SidecarConfigException(PREFIX + ".startup-timeout", String.valueOf(timeout), "must be"
                    + " positive, e.g. 30s", null);
        }
        return f;
    }

    private static void refusedWithUri(String key, Object value) {
        if (value != null) {
            throw new SidecarConfigException(PREFIX + "." + key, String.valueOf(value), "set either " + PREFIX
                    + ".uri or " + PREFIX + ".host, port and virtual-host, not both", null);
        }
    }

    /** Where {@code f} connects, without the password: {@code user@host:port/vhost}. */
    static String target(ConnectionFactory f) {
        return f.getUsername() + "@" + f.getHost() + ":" + f.getPort() + "/" + f.getVirtualHost();
    }

    /**
     * Fails unless the node accepts a connection (login included) within {@code startup-timeout}, trying again
     * every 250 ms while it refuses or cannot be reached.
     *
     * @throws SidecarConfigException naming {@code sidecar.rabbitmq.password} if the login is refused, else the URI
     *                                or host
     */
    static void check(ConnectionFactory given, SidecarRabbitMqProperties r) {
        Duration timeout = r.getStartupTimeout();
        String key = r.getUri() != null && !r.getUri().isBlank() ? PREFIX + ".uri" : PREFIX + ".host";
        String value = key.endsWith(".uri") ? r.getUri() : r.getHost();
        ConnectionFactory f = given.clone();
        int ms = (int) Math.max(1000, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        f.setAutomaticRecoveryEnabled(false);
        f.setConnectionTimeout(ms);
        f.setHandshakeTimeout(ms);
        f.setShutdownTimeout(ms);
        f.setExceptionHandler(new DefaultExceptionHandler() {
            @Override
            public void handleUnexpectedConnectionDriverException(Connection conn, Throwable exception) {
                // The attempt's failure is reported below, as one line naming the key; not as a warning first.
            }
        });
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (Connection ignored = f.newConnection("outbox-sidecar-startup-check")) {
                return;
            } catch (AuthenticationFailureException e) {
                boolean file = r.getPasswordFile() != null;
                throw new SidecarConfigException(PREFIX + (file ? ".password-file" : ".password"),
                        file ? r.getPasswordFile() : r.getPassword(), "RabbitMQ at " + target(f)
                        + " refused the login: " + Outboxes.rootMessage(e), e);
            } catch (Exception e) {
                if (System.nanoTime() + RETRY_NANOS - deadline > 0) {
                    throw new SidecarConfigException(key, value, "RabbitMQ at " + target(f) + " did not accept a"
                            + " connection within " + PREFIX + ".startup-timeout (" + timeout.toSeconds() + " s): "
                            + Outboxes.rootMessage(e), e);
                }
                LockSupport.parkNanos(RETRY_NANOS);
                if (Thread.currentThread().isInterrupted()) {
                    throw new SidecarConfigException(key, value, "interrupted while connecting", e);
                }
            }
        }
    }
}
