package dev.outbox.spring;

import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The keys a properties class binds, read off it by reflection (so they can never drift from what is bound), the
 * near miss of an unknown key, and the start-up check that every {@code outbox.*} key the application set is one
 * of them. Shared with the sidecar, which checks its {@code sidecar.*} file the same way. Stateless and thread-safe.
 */
public final class OutboxPropertyKeys {
    /** The root of the starter's keys. */
    public static final String ROOT = "outbox";

    private OutboxPropertyKeys() {
    }

    /**
     * Fails start-up on the first {@code outbox.*} key of {@code env} that {@link OutboxProperties} does not bind,
     * naming it as written and the nearest known key. Environment variables and JVM system properties are not
     * checked: {@code OUTBOX_*} and {@code -Doutbox.*} may belong to other tools (the project's own test servers read
     * {@code -Doutbox.test.servers}, for one); the application's configuration files and command-line arguments are.
     *
     * @param env the application's environment, after its configuration files and arguments were loaded
     * @throws OutboxConfigurationException naming the unknown key, where it was set, and the nearest known key
     */
    public static void check(ConfigurableEnvironment env) {
        for (PropertySource<?> source : env.getPropertySources()) {
            if (!(source instanceof EnumerablePropertySource<?> enumerable)
                    || StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME.equals(source.getName())
                    || StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME.equals(source.getName())
                    || "configurationProperties".equals(source.getName())) {
                continue;
            }
            for (String name : enumerable.getPropertyNames()) {
                if (!name.regionMatches(true, 0, ROOT + ".", 0, ROOT.length() + 1)) {
                    continue;
                }
                String unknownAt = unknown(OutboxProperties.class, name);
                if (unknownAt == null) {
                    continue;
                }
                String near = suggest(ROOT, OutboxProperties.class, name);
                throw new OutboxConfigurationException(name, "is not a property of the outbox starter (set in "
                        + source.getName() + ")" + (near == null ? "" : "; did you mean '" + near + "'?"),
                        near == null ? "remove it (the outbox.* properties are listed in the starter's"
                                + " configuration metadata and the guide)" : "rename it to '" + near + "'", null);
            }
        }
    }

    /**
     * Null if {@code name} (relaxed: kebab, camel or upper case, {@code [..]} map keys) is a key of {@code root},
     * else the key's prefix up to its first unknown element.
     */
    static String unknown(Class<?> root, String name) {
        ConfigurationPropertyName n = ConfigurationPropertyName.adapt(name, '.');
        if (n.isEmpty()) {
            return name;
        }
        Type type = root;
        for (int i = 1; i < n.getNumberOfElements(); i++) {
            Class<?> raw = raw(type);
            if (raw == null) {
                return null;
            }
            if (Map.class.isAssignableFrom(raw)) {
                return null; // a map's keys are the user's
            }
            Map<String, Type> properties = properties(raw);
            if (properties.isEmpty()) {
                return n.chop(i + 1).toString(); // a value has no sub-keys
            }
            Type next = null;
            String element = n.getElement(i, ConfigurationPropertyName.Form.UNIFORM);
            for (Map.Entry<String, Type> p : properties.entrySet()) {
                if (p.getKey().replace("-", "").equals(element)) {
                    next = p.getValue();
                }
            }
            if (next == null) {
                return n.chop(i + 1).toString();
            }
            type = next;
        }
        return properties(raw(type)).isEmpty() || Map.class.isAssignableFrom(raw(type)) ? null : name;
    }

    /**
     * The known key closest to {@code key} (in kebab case, dot-separated, map keys as they were written), or null if
     * none is close: the first unknown segment is compared with the keys allowed where it stands.
     *
     * @param root     the root segment, e.g. {@code outbox}
     * @param rootType the properties class bound at {@code root}
     * @param key      the unknown key, dot-separated, in kebab or camel case
     * @return the known key up to and including the corrected segment (for {@code outbox.dispatcher.max-atempts},
     *         {@code outbox.dispatcher.max-attempts}), or {@code null}
     */
    public static String suggest(String root, Class<?> rootType, String key) {
        String[] segments = key.split("\\.");
        if (segments.length == 0) {
            return null;
        }
        if (!segments[0].equals(root)) {
            return closest(segments[0], List.of(root)) == null ? null : root + key.substring(segments[0].length());
        }
        Type type = rootType;
        StringBuilder prefix = new StringBuilder(root);
        for (int i = 1; i < segments.length; i++) {
            Class<?> raw = raw(type);
            if (raw == null) {
                return null;
            }
            if (Map.class.isAssignableFrom(raw)) {
                prefix.append('.').append(segments[i]);
                type = ((ParameterizedType) type).getActualTypeArguments()[1];
                continue;
            }
            Map<String, Type> properties = properties(raw);
            if (properties.isEmpty()) {
                return null;
            }
            String segment = kebab(segments[i]);
            Type next = properties.get(segment);
            if (next == null) {
                String near = closest(segment, new ArrayList<>(properties.keySet()));
                return near == null ? null : prefix + "." + near;
            }
            prefix.append('.').append(segment);
            type = next;
        }
        return null;
    }

    /**
     * The bindable properties of one of the outbox's JavaBeans (kebab-case name to type), from its public getters;
     * none for a value (a class outside {@code dev.outbox}, an enum, a primitive).
     */
    private static Map<String, Type> properties(Class<?> bean) {
        Map<String, Type> result = new TreeMap<>();
        if (bean == null || !bean.getName().startsWith("dev.outbox.") || bean.isEnum() || bean.isPrimitive()) {
            return result;
        }
        for (Method m : bean.getMethods()) {
            if (m.getParameterCount() != 0 || Modifier.isStatic(m.getModifiers())
                    || m.getDeclaringClass() == Object.class) {
                continue;
            }
            String name = m.getName();
            String property = name.startsWith("get") && name.length() > 3 ? name.substring(3)
                    : name.startsWith("is") && name.length() > 2 ? name.substring(2) : null;
            if (property != null) {
                result.put(kebab(property), m.getGenericReturnType());
            }
        }
        return result;
    }

    private static Class<?> raw(Type type) {
        if (type instanceof Class<?> c) {
            return c;
        }
        if (type instanceof ParameterizedType p && p.getRawType() instanceof Class<?> c) {
            return c;
        }
        return null;
    }

    /**
     * {@code maxAttempts} as {@code max-attempts}; a kebab-case name unchanged.
     *
     * @param camel a property name in camel case (a JavaBean property) or already in kebab case
     * @return the name in kebab case: a hyphen before each upper-case letter, which is lowered
     */
    public static String kebab(String camel) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < camel.length(); i++) {
            char c = camel.charAt(i);
            if (Character.isUpperCase(c)) {
                if (i > 0 && camel.charAt(i - 1) != '-') {
                    b.append('-');
                }
                b.append(Character.toLowerCase(c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /**
     * The candidate within an edit distance of a third of the word's length (at least 2), or null.
     *
     * @param word       the unknown word; compared in lower case
     * @param candidates the known words, in lower case
     * @return the candidate at the smallest Levenshtein distance (the first of equals) if within the bound, else
     *         {@code null}
     */
    public static String closest(String word, List<String> candidates) {
        String w = word.toLowerCase(Locale.ROOT);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String c : candidates) {
            int d = distance(w, c);
            if (d < bestDistance) {
                best = c;
                bestDistance = d;
            }
        }
        return bestDistance <= Math.max(2, w.length() / 3) ? best : null;
    }

    /** Levenshtein distance. */
    private static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                current[j] = Math.min(Math.min(current[j - 1] + 1, previous[j] + 1), previous[j - 1] + cost);
            }
            int[] t = previous;
            previous = current;
            current = t;
        }
        return previous[b.length()];
    }
}
