package dev.outbox.sidecar;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads a secret given either inline (usually {@code ${ENV_VAR}} in the configuration file) or as a file (a mounted
 * Kubernetes or systemd credential). The secret itself never appears in an error or a log line. Stateless.
 */
final class Secrets {

    /**
     * The secret of {@code valueKey} or, if that is not set, the content of the file of {@code fileKey} without its
     * trailing line break; null when neither is set.
     *
     * @throws SidecarConfigException if both are set, or the file cannot be read
     */
    String read(String valueKey, String value, String fileKey, String file) {
        if (value != null && file != null) {
            throw new SidecarConfigException(fileKey, file, "set either " + valueKey + " or " + fileKey + ", not both",
                    null);
        }
        if (file == null) {
            Redaction.remember(value);
            return value;
        }
        try {
            String secret = Files.readString(Path.of(file), StandardCharsets.UTF_8).replaceFirst("\\R\\z", "");
            Redaction.remember(secret);
            return secret;
        } catch (IOException | RuntimeException e) {
            throw new SidecarConfigException(fileKey, file, "cannot read the file: " + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : " " + e.getMessage()), e);
        }
    }
}
