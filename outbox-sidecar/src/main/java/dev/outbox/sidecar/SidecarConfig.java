package dev.outbox.sidecar;

import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.BindHandler;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.bind.PropertySourcesPlaceholdersResolver;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.context.properties.bind.handler.NoUnboundElementsBindHandler;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.convert.ApplicationConversionService;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.io.FileSystemResource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the configuration file: YAML, every key under {@code sidecar:}, bound strictly to {@link SidecarProperties}
 * (an unknown key is an error, with the nearest known key as a suggestion). {@code ${NAME}} placeholders are filled
 * in from environment variables and system properties; environment variables are never bound by themselves (a
 * {@code SIDECAR_*} variable Kubernetes injects for a service named "sidecar" must not count as configuration).
 * Stateless.
 */
final class SidecarConfig {

    /** The bound properties and a look-up of raw values as written in the file. */
    record Loaded(SidecarProperties properties, List<ConfigurationPropertySource> sources) {
        /** The value of {@code key} as written in the file (placeholders not filled in), or null. */
        String raw(String key) {
            if (!ConfigurationPropertyName.isValid(key)) {
                return null;
            }
            ConfigurationPropertyName name = ConfigurationPropertyName.of(key);
            for (ConfigurationPropertySource s : sources) {
                ConfigurationProperty p = s.getConfigurationProperty(name);
                if (p != null && p.getValue() != null) {
                    return String.valueOf(p.getValue());
                }
            }
            return null;
        }
    }

    private SidecarConfig() {
    }

    /**
     * Loads and binds {@code file}.
     *
     * @throws SidecarConfigException naming the first bad key and its value
     */
    static Loaded load(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new SidecarConfigException("--config", file.toString(), "no such file", null);
        }
        List<PropertySource<?>> yaml;
        try {
            yaml = new YamlPropertySourceLoader().load("config file " + file, new FileSystemResource(file));
        } catch (IOException | RuntimeException e) {
            throw new SidecarConfigException("--config", file.toString(), "not valid YAML: "
                    + Outboxes.rootMessage(e), e);
        }
        for (PropertySource<?> source : yaml) {
            if (source instanceof EnumerablePropertySource<?> e) {
                for (String name : e.getPropertyNames()) {
                    if (!name.equals(ConfigKeys.ROOT) && !name.startsWith(ConfigKeys.ROOT + ".")) {
                        throw unknown(name, String.valueOf(e.getProperty(name)));
                    }
                }
            }
        }
        StandardEnvironment env = new StandardEnvironment();
        yaml.forEach(env.getPropertySources()::addLast);
        checkPlaceholders(yaml, env);
        List<ConfigurationPropertySource> sources = new ArrayList<>();
        ConfigurationPropertySources.from(yaml).forEach(sources::add);
        Loaded loaded = new Loaded(new SidecarProperties(), sources);
        Binder binder = new Binder(sources, new PropertySourcesPlaceholdersResolver(env),
                ApplicationConversionService.getSharedInstance());
        try {
            binder.bind(ConfigKeys.ROOT, Bindable.ofInstance(loaded.properties()),
                    new NoUnboundElementsBindHandler(BindHandler.DEFAULT));
        } catch (BindException e) {
            throw bindError(e, loaded);
        }
        return loaded;
    }

    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([^}:]+)(:[^}]*)?}");

    /**
     * Every {@code ${NAME}} without a default must name a set environment variable (or system property): Spring's
     * binder would keep an unresolved placeholder as text, and an unset password would fail much later as a failed
     * login. Remembers the value of every key that holds a secret, so that it is masked wherever it is printed.
     */
    private static void checkPlaceholders(List<PropertySource<?>> yaml, StandardEnvironment env) {
        for (PropertySource<?> source : yaml) {
            if (!(source instanceof EnumerablePropertySource<?> e)) {
                continue;
            }
            for (String name : e.getPropertyNames()) {
                Object value = e.getProperty(name);
                if (value == null) {
                    continue;
                }
                String raw = String.valueOf(value);
                Matcher m = PLACEHOLDER.matcher(raw);
                while (m.find()) {
                    if (m.group(2) == null && env.getProperty(m.group(1)) == null) {
                        throw new SidecarConfigException(name, raw, "the environment variable " + m.group(1)
                                + " is not set", null);
                    }
                }
                if (SidecarConfigException.isSecret(name)) {
                    Redaction.remember(env.resolvePlaceholders(raw));
                }
            }
        }
    }

    private static SidecarConfigException bindError(BindException e, Loaded loaded) {
        Throwable cause = e.getCause();
        if (cause instanceof UnboundConfigurationPropertiesException u) {
            ConfigurationProperty first = u.getUnboundProperties().stream()
                    .min(Comparator.comparing(p -> p.getName().toString())).orElseThrow();
            return unknown(first.getName().toString(), String.valueOf(first.getValue()));
        }
        ConfigurationProperty p = e.getProperty();
        String key = p != null ? p.getName().toString() : e.getName().toString();
        String value = p != null && p.getValue() != null ? String.valueOf(p.getValue()) : loaded.raw(key);
        return new SidecarConfigException(key, value, problem(cause), e);
    }

    /** Why a value could not be bound, in words. */
    private static String problem(Throwable cause) {
        String root = cause == null ? "cannot be bound" : Outboxes.rootMessage(cause);
        String type = cause == null ? "" : String.valueOf(cause.getMessage());
        if (type.contains("java.time.Duration")) {
            return "not a duration; write e.g. 500ms, 10s, 5m or PT10S";
        }
        if (type.contains("DataSize")) {
            return "not a data size; write e.g. 512KB, 64MB or 1GB";
        }
        if (type.contains("to type [int]") || type.contains("java.lang.Integer")) {
            return "not a whole number";
        }
        if (type.contains("to type [boolean]") || type.contains("java.lang.Boolean")) {
            return "not true or false";
        }
        if (type.contains("StoreType")) {
            return "not a store type; write postgres or mysql";
        }
        String enumProblem = enumProblem(root);
        if (enumProblem != null) {
            return enumProblem;
        }
        if (root.startsWith("Could not resolve placeholder")) {
            return root.replaceFirst(" in value .*", "") + " (is the environment variable set?)";
        }
        return root;
    }

    /** "No enum constant a.b.Type.VALUE", Java's words, as the values the key takes and the nearest one; or null. */
    private static String enumProblem(String root) {
        Matcher m = Pattern.compile("No enum constant ([\\w.$]+)\\.([^.\\s]*)$").matcher(root);
        if (!m.find()) {
            return null;
        }
        String type = m.group(1);
        while (true) {
            try {
                Class<?> c = Class.forName(type);
                if (!c.isEnum()) {
                    return null;
                }
                List<String> names = new ArrayList<>();
                for (Object constant : c.getEnumConstants()) {
                    names.add(((Enum<?>) constant).name().toLowerCase(Locale.ROOT).replace('_', '-'));
                }
                String near = ConfigKeys.closest(m.group(2), names);
                return "not one of " + String.join(", ", names) + (near == null ? "" : " (did you mean '" + near
                        + "'?)");
            } catch (ClassNotFoundException e) {
                int dot = type.lastIndexOf('.');
                if (dot < 0) {
                    return null;
                }
                type = type.substring(0, dot) + '$' + type.substring(dot + 1); // a nested type
            }
        }
    }

    private static SidecarConfigException unknown(String key, String value) {
        String near = ConfigKeys.suggest(key);
        return new SidecarConfigException(key, value, "unknown key" + (near == null ? "" : " (did you mean '"
                + near + "'?)"), null);
    }
}
