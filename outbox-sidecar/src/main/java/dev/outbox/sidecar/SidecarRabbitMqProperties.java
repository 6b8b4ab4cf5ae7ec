package dev.outbox.sidecar;

import java.time.Duration;

/**
 * The RabbitMQ node every outbox publishes to, instead of Kafka: chosen when {@code uri} or {@code host} is set.
 * The password never appears in a log line (nor does a URI's). Bound as {@code sidecar.rabbitmq.*}
 * ({@link SidecarProperties#getRabbitmq()}).
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. The sidecar reads it once, at start-up.
 */
public final class SidecarRabbitMqProperties {
    /** AMQP URI, amqp://user:password@host:5672/vhost; or host, port, username, password and virtual-host. */
    private String uri;
    /** The node's host name; instead of uri. */
    private String host;
    /** The node's AMQP port; 5672 by default. */
    private Integer port;
    /** The user to connect as; guest by default. */
    private String username;
    /** The user's password; prefer ${ENV_VAR} or password-file. Never logged. */
    private String password;
    /** A file holding the password (trailing line break ignored), e.g. a mounted Kubernetes secret. */
    private String passwordFile;
    /** The virtual host; / by default. */
    private String virtualHost;
    /** How long start-up waits for the node to accept a connection before giving up. */
    private Duration startupTimeout = Duration.ofSeconds(30);

    /**
     * Whether RabbitMQ is the broker.
     *
     * @return true if {@code uri} or {@code host} is set
     */
    boolean isConfigured() {
        return uri != null && !uri.isBlank() || host != null && !host.isBlank();
    }

    /**
     * {@return the node's AMQP URI ({@code amqp://user:password@host:5672/vhost}), or null to give the host and
     * the rest one by one} Bound from the {@code uri} property.
     */
    public String getUri() {
        return uri;
    }

    /**
     * Sets the {@code uri} property.
     *
     * @param uri an {@code amqp://} URI; its password is redacted from every log line. With it, {@code host},
     *            {@code port} and {@code virtual-host} are refused; {@code username} and {@code password} (or
     *            {@code password-file}) replace the URI's
     */
    public void setUri(String uri) {
        this.uri = uri;
    }

    /**
     * {@return the node's host name, or null when {@code uri} is used} Bound from the {@code host} property.
     */
    public String getHost() {
        return host;
    }

    /**
     * Sets the {@code host} property.
     *
     * @param host a host name or address
     */
    public void setHost(String host) {
        this.host = host;
    }

    /**
     * {@return the node's AMQP port, or null for 5672} Bound from the {@code port} property.
     */
    public Integer getPort() {
        return port;
    }

    /**
     * Sets the {@code port} property.
     *
     * @param port 1 to 65535
     */
    public void setPort(Integer port) {
        this.port = port;
    }

    /**
     * {@return the user to connect as, or null for the URI's (or {@code guest})} Bound from the {@code username}
     * property.
     */
    public String getUsername() {
        return username;
    }

    /**
     * Sets the {@code username} property.
     *
     * @param username the user
     */
    public void setUsername(String username) {
        this.username = username;
    }

    /**
     * {@return the password, or null} Bound from the {@code password} property; never logged.
     */
    public String getPassword() {
        return password;
    }

    /**
     * Sets the {@code password} property.
     *
     * @param password the password; prefer {@code ${ENV_VAR}} or {@code password-file}
     */
    public void setPassword(String password) {
        this.password = password;
    }

    /**
     * {@return a file holding the password, or null} Bound from the {@code password-file} property.
     */
    public String getPasswordFile() {
        return passwordFile;
    }

    /**
     * Sets the {@code password-file} property.
     *
     * @param passwordFile the file's path; its trailing line break is ignored. Not together with {@code password}
     */
    public void setPasswordFile(String passwordFile) {
        this.passwordFile = passwordFile;
    }

    /**
     * {@return the virtual host, or null for the URI's (or {@code /})} Bound from the {@code virtual-host}
     * property.
     */
    public String getVirtualHost() {
        return virtualHost;
    }

    /**
     * Sets the {@code virtual-host} property.
     *
     * @param virtualHost the virtual host, e.g. {@code /} or {@code orders}
     */
    public void setVirtualHost(String virtualHost) {
        this.virtualHost = virtualHost;
    }

    /**
     * {@return how long start-up waits for the node to accept a connection; 30 seconds by default} Bound from the
     * {@code startup-timeout} property.
     */
    public Duration getStartupTimeout() {
        return startupTimeout;
    }

    /**
     * Sets the {@code startup-timeout} property.
     *
     * @param startupTimeout a positive duration
     */
    public void setStartupTimeout(Duration startupTimeout) {
        this.startupTimeout = startupTimeout;
    }
}
