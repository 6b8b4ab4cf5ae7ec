package dev.outbox.sidecar;

/**
 * Who may use the operator API and console. With neither a token nor a username configured, both are off. Bound as
 * {@code sidecar.operator.*} ({@link SidecarProperties#getOperator()}).
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. The sidecar reads it once, at start-up.
 */
public final class SidecarOperatorProperties {
    /** User name for the console's login form and for HTTP basic authentication. */
    private String username;
    /** Password of {@code username}; prefer ${ENV_VAR} or password-file. Never logged. */
    private String password;
    /** A file holding the password. */
    private String passwordFile;
    /** A bearer token for the API ({@code Authorization: Bearer <token>}). Never logged. */
    private String token;
    /** A file holding the token. */
    private String tokenFile;

    /**
     * {@return the user name of the console's login form and of HTTP basic authentication, or {@code null} for
     * none} Bound from the {@code username} property.
     */
    public String getUsername() {
        return username;
    }

    /**
     * Sets the {@code username} property.
     *
     * @param username the user name, or {@code null}; with it a password is required
     */
    public void setUsername(String username) {
        this.username = username;
    }

    /**
     * {@return the password of {@code username}, or {@code null}; never logged} Bound from the {@code password}
     * property.
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
     * {@return a file holding the password (its trailing line break ignored), or {@code null}} Bound from the
     * {@code password-file} property.
     */
    public String getPasswordFile() {
        return passwordFile;
    }

    /**
     * Sets the {@code password-file} property.
     *
     * @param passwordFile the file's path, or {@code null}; not together with {@code password}
     */
    public void setPasswordFile(String passwordFile) {
        this.passwordFile = passwordFile;
    }

    /**
     * {@return the bearer token of the API ({@code Authorization: Bearer <token>}), or {@code null} for none; never
     * logged} Bound from the {@code token} property.
     */
    public String getToken() {
        return token;
    }

    /**
     * Sets the {@code token} property.
     *
     * @param token the token, or {@code null}; not together with {@code token-file}
     */
    public void setToken(String token) {
        this.token = token;
    }

    /**
     * {@return a file holding the token (its trailing line break ignored), or {@code null}} Bound from the
     * {@code token-file} property.
     */
    public String getTokenFile() {
        return tokenFile;
    }

    /**
     * Sets the {@code token-file} property.
     *
     * @param tokenFile the file's path, or {@code null}; not together with {@code token}
     */
    public void setTokenFile(String tokenFile) {
        this.tokenFile = tokenFile;
    }
}
