package dev.outbox.sidecar;

import java.time.Duration;

/**
 * The connection pool of one outbox's (or inbox's) database: each one's {@code datasource} section.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. The sidecar reads it once, at start-up.
 */
public final class SidecarDataSourceProperties {
    /** JDBC URL, e.g. jdbc:postgresql://db:5432/app or jdbc:mysql://db:3306/app. Required. */
    private String url;
    /** Database user. */
    private String username;
    /** Database password; prefer ${ENV_VAR} or password-file. Never logged. */
    private String password;
    /** A file holding the password (trailing line break ignored), e.g. a mounted Kubernetes secret. */
    private String passwordFile;
    /** Connections in the pool: the dispatcher uses two at a time, the operator API one. */
    private int maximumPoolSize = 4;
    /** How long a call waits for a connection from the pool. */
    private Duration connectionTimeout = Duration.ofSeconds(10);

    /** An outbox's pool: 4 connections by default. */
    public SidecarDataSourceProperties() {
    }

    SidecarDataSourceProperties(int maximumPoolSize) {
        this.maximumPoolSize = maximumPoolSize;
    }

    /**
     * {@return the JDBC URL of the outbox's (or inbox's) database, for example
     * {@code jdbc:postgresql://db:5432/app} or {@code jdbc:mysql://db:3306/app}; required} Bound from the
     * {@code url} property.
     */
    public String getUrl() {
        return url;
    }

    /**
     * Sets the {@code url} property.
     *
     * @param url a PostgreSQL, MySQL or MariaDB JDBC URL; a password in it is redacted from every log line
     */
    public void setUrl(String url) {
        this.url = url;
    }

    /**
     * {@return the database user, or {@code null} for the driver's default} Bound from the {@code username}
     * property.
     */
    public String getUsername() {
        return username;
    }

    /**
     * Sets the {@code username} property.
     *
     * @param username the user, or {@code null}
     */
    public void setUsername(String username) {
        this.username = username;
    }

    /**
     * {@return the database password, or {@code null}; never logged} Bound from the {@code password} property.
     */
    public String getPassword() {
        return password;
    }

    /**
     * Sets the {@code password} property.
     *
     * @param password the password (prefer {@code ${ENV_VAR}} or {@code password-file}), or {@code null}; not
     *                 together with {@code password-file}
     */
    public void setPassword(String password) {
        this.password = password;
    }

    /**
     * {@return a file holding the password (its trailing line break ignored), for example a mounted Kubernetes
     * secret, or {@code null}} Bound from the {@code password-file} property.
     */
    public String getPasswordFile() {
        return passwordFile;
    }

    /**
     * Sets the {@code password-file} property.
     *
     * @param passwordFile the file's path, or {@code null}; not together with {@code password}. Start-up stops if
     *                     it cannot be read.
     */
    public void setPasswordFile(String passwordFile) {
        this.passwordFile = passwordFile;
    }

    /**
     * {@return the connections in the pool (an outbox's dispatcher uses two at a time, the operator API one); 4 by
     * default for an outbox, 2 for an inbox} Bound from the {@code maximum-pool-size} property.
     */
    public int getMaximumPoolSize() {
        return maximumPoolSize;
    }

    /**
     * Sets the {@code maximum-pool-size} property.
     *
     * @param maximumPoolSize at least 2 for an outbox, 1 for an inbox; checked at start-up
     */
    public void setMaximumPoolSize(int maximumPoolSize) {
        this.maximumPoolSize = maximumPoolSize;
    }

    /**
     * {@return how long a call waits for a connection from the pool; 10 seconds by default} Bound from the
     * {@code connection-timeout} property.
     */
    public Duration getConnectionTimeout() {
        return connectionTimeout;
    }

    /**
     * Sets the {@code connection-timeout} property.
     *
     * @param connectionTimeout a duration; below 250 ms counts as 250 ms
     */
    public void setConnectionTimeout(Duration connectionTimeout) {
        this.connectionTimeout = connectionTimeout;
    }
}
