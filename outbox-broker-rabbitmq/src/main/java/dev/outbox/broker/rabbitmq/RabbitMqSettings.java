package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.ConnectionFactory;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The connection settings the adapter enforces, each with its reason, and the checks of the values users give: one
 * place for what {@link RabbitMqMessageBroker.Builder} and {@link RabbitMqInboxConsumer.Builder} share. Passwords
 * never leave it: URIs are shown {@linkplain #redacted redacted}, connections by {@linkplain #target target}.
 * Stateless.
 */
final class RabbitMqSettings {
    private RabbitMqSettings() {
    }

    /**
     * A factory for {@code uri}.
     *
     * @throws IllegalArgumentException naming the URI without its password, and without the client's exception
     *                                  (its message may quote the URI, password included)
     */
    static ConnectionFactory fromUri(String uri) {
        if (uri == null || uri.isBlank()) {
            throw new IllegalArgumentException("uri must not be blank");
        }
        ConnectionFactory f = new ConnectionFactory();
        try {
            f.setUri(uri.trim());
        } catch (Exception e) {
            throw new IllegalArgumentException("uri is not a valid AMQP URI (" + e.getClass().getSimpleName()
                    + "): " + redacted(uri));
        }
        return f;
    }

    /**
     * A copy of {@code given} for the publishing broker: automatic recovery off (a lost channel must fail what it
     * had in flight before anything is sent again, so the broker recovers itself); every blocking call bounded by
     * {@code operationTimeout}; the heartbeat that finds a silent node; the client's threads named and daemons.
     */
    static ConnectionFactory forPublisher(ConnectionFactory given, Duration operationTimeout, Duration heartbeat) {
        ConnectionFactory f = given.clone();
        int operationMillis = (int) operationTimeout.toMillis();
        f.setAutomaticRecoveryEnabled(false);
        f.setTopologyRecoveryEnabled(false);
        f.setConnectionTimeout(operationMillis);
        f.setHandshakeTimeout(operationMillis);
        f.setChannelRpcTimeout(operationMillis);
        f.setShutdownTimeout(operationMillis);
        f.setRequestedHeartbeat((int) Math.max(1, heartbeat.toSeconds()));
        f.setThreadFactory(named("outbox-rabbitmq-io-"));
        return f;
    }

    /**
     * A copy of {@code given} for a consumer: the client's automatic recovery on, every second, consumers included
     * (the node redelivers what was not acknowledged, and the inbox recognises it).
     */
    static ConnectionFactory forConsumer(ConnectionFactory given) {
        ConnectionFactory f = given.clone();
        f.setAutomaticRecoveryEnabled(true);
        f.setTopologyRecoveryEnabled(true);
        f.setNetworkRecoveryInterval(1_000);
        return f;
    }

    /** {@code value}, if between {@code min} and {@code max}; otherwise an exception naming it and the bounds. */
    static Duration range(String what, Duration value, Duration min, Duration max) {
        Objects.requireNonNull(value, what);
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new IllegalArgumentException(what + " must be between " + min.toMillis() + " ms and "
                    + max.toMillis() + " ms, was " + value.toMillis() + " ms");
        }
        return value;
    }

    /** {@code uri} without the password of its user info. */
    static String redacted(String uri) {
        return uri.replaceFirst("(://[^:/@]*):[^@/]*@", "$1:***@");
    }

    /** Where a factory connects, without its password: {@code user@host:port/vhost}. */
    static String target(ConnectionFactory f) {
        return f.getUsername() + "@" + f.getHost() + ":" + f.getPort() + "/" + f.getVirtualHost();
    }

    private static ThreadFactory named(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
