package dev.outbox.sidecar;

import dev.outbox.spring.OutboxPropertyKeys;

import java.util.List;

/**
 * The keys the configuration file may hold, read off {@link SidecarProperties} by reflection (so they can never
 * drift from what is bound), and the near miss of an unknown key: the starter's {@link OutboxPropertyKeys}, which
 * checks {@code outbox.*} the same way. Stateless and thread-safe.
 */
final class ConfigKeys {
    /** The root of every key. */
    static final String ROOT = "sidecar";

    private ConfigKeys() {
    }

    /**
     * The known key closest to {@code key} (in kebab case, dot-separated, map keys as they were written), or null if
     * none is close: the last segment is compared with the keys allowed where it stands.
     */
    static String suggest(String key) {
        return OutboxPropertyKeys.suggest(ROOT, SidecarProperties.class, key);
    }

    static String kebab(String camel) {
        return OutboxPropertyKeys.kebab(camel);
    }

    /** The candidate within an edit distance of a third of the word's length (at least 2), or null. */
    static String closest(String word, List<String> candidates) {
        return OutboxPropertyKeys.closest(word, candidates);
    }
}
