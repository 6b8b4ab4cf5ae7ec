package dev.outbox.testservers;

import java.net.URI;
import java.net.URISyntaxException;

/** An existing RabbitMQ node named by a URI; never stopped, restarted or disturbed. Thread-safe (immutable). */
final class ExternalRabbitMq implements RabbitMqServer {
    private final URI uri;
    private final String source;

    ExternalRabbitMq(String uri, String source) {
        try {
            this.uri = new URI(uri.trim());
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(source + " is not a URI: " + e.getReason(), e);
        }
        if (!"amqp".equals(this.uri.getScheme()) && !"amqps".equals(this.uri.getScheme())) {
            throw new IllegalArgumentException(source + " must be an amqp:// or amqps:// URI, not " + redacted(this.uri));
        }
        this.source = source;
    }

    @Override
    public ServerMode mode() {
        return ServerMode.EXTERNAL;
    }

    @Override
    public String version() {
        return "unknown";
    }

    @Override
    public URI uri() {
        return uri;
    }

    @Override
    public int closeAllConnections() {
        throw unsupported("close the connections of");
    }

    @Override
    public String rabbitmqctl(String... arguments) {
        throw unsupported("run rabbitmqctl against");
    }

    @Override
    public void stop() {
        throw unsupported("stop");
    }

    @Override
    public void restart() {
        throw unsupported("restart");
    }

    private UnsupportedOperationException unsupported(String what) {
        return new UnsupportedOperationException("cannot " + what + " the existing RabbitMQ at " + redacted(uri)
                + " (given by " + source + "); run the test with the embedded node");
    }

    /** The URI without its password. */
    static String redacted(URI uri) {
        String info = uri.getRawUserInfo();
        if (info == null || !info.contains(":")) {
            return uri.toString();
        }
        return uri.toString().replace(info, info.substring(0, info.indexOf(':')) + ":***");
    }

    @Override
    public String toString() {
        return "RabbitMQ (external) at " + redacted(uri);
    }
}
