package dev.outbox.sidecar;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The keys the configuration file may hold, read off {@link SidecarProperties} by reflection (so they can never
 * drift from what is bound), and the near miss of an unknown key. Stateless and thread-safe.
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
        String[] segments = key.split("\\.");
        if (segments.length == 0) {
            return null;
        }
        if (!segments[0].equals(ROOT)) {
            return closest(segments[0], List.of(ROOT)) == null ? null : ROOT + key.substring(segments[0].length());
        }
        Type type = SidecarProperties.class;
        StringBuilder prefix = new StringBuilder(ROOT);
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
            Type next = properties.get(segments[i]);
            if (next == null) {
                String near = closest(segments[i], new ArrayList<>(properties.keySet()));
                return near == null ? null : prefix + "." + near;
            }
            prefix.append('.').append(segments[i]);
            type = next;
        }
        return null;
    }

    /** The bindable properties of a JavaBean (kebab-case name to type), from its public getters. */
    private static Map<String, Type> properties(Class<?> bean) {
        Map<String, Type> result = new java.util.TreeMap<>();
        if (bean.getName().startsWith("java.") || bean.isEnum() || bean.isPrimitive()) {
            return result;
        }
        for (Method m : bean.getMethods()) {
            if (m.getParameterCount() != 0 || Modifier.isStatic(m.getModifiers()) || m.getDeclaringClass() == Object.class) {
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

    static String kebab(String camel) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < camel.length(); i++) {
            char c = camel.charAt(i);
            if (Character.isUpperCase(c)) {
                if (i > 0) {
                    b.append('-');
                }
                b.append(Character.toLowerCase(c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /** The candidate within an edit distance of a third of the word's length (at least 2), or null. */
    static String closest(String word, List<String> candidates) {
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
