package dev.outbox.sidecar;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The sidecar's logging: Spring Boot's (Logback), with levels and the output format taken from the configuration file
 * ({@code sidecar.logging}). Two phases: until Spring starts, lines go to standard error with the levels below and
 * those of the file; once Spring starts, Spring Boot's logging system takes over with the same levels
 * ({@link #springProperties}) and, if {@code sidecar.logging.format} says so, structured JSON lines. Spring Boot's
 * own failure reports are off: a start-up failure is reported as one line by {@link SidecarApplication}. Stateless.
 */
final class SidecarLogging {
    /** The levels the sidecar starts with; {@code sidecar.logging.level.<logger>} overrides any of them. */
    static final Map<String, String> DEFAULT_LEVELS = defaults();

    private SidecarLogging() {
    }

    private static Map<String, String> defaults() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("root", "info");
        m.put("org.apache.kafka", "warn");
        m.put("org.apache.kafka.clients.NetworkClient", "error");
        m.put("org.apache.kafka.clients.admin", "error");
        m.put("com.zaxxer.hikari", "warn");
        m.put("org.springframework", "warn");
        m.put("org.springframework.boot.SpringApplication", "off");
        m.put("org.springframework.boot.diagnostics", "off");
        m.put("org.apache.catalina", "warn");
        m.put("org.apache.tomcat", "warn");
        m.put("org.apache.coyote", "warn");
        return Map.copyOf(m);
    }

    /** Until Spring starts: one console appender on standard error, the default levels. */
    static void configure() {
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        context.reset();
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern("%d{yyyy-MM-dd'T'HH:mm:ss.SSSXX} %5level [%thread] %logger - %msg%n");
        encoder.start();
        ConsoleAppender<ILoggingEvent> console = new ConsoleAppender<>();
        console.setContext(context);
        console.setName("console");
        console.setTarget("System.err");
        console.setEncoder(encoder);
        console.start();
        context.getLogger(Logger.ROOT_LOGGER_NAME).addAppender(console);
        levels(DEFAULT_LEVELS);
        SLF4JBridgeHandler.removeHandlersForRootLogger();
        SLF4JBridgeHandler.install();
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.INFO);
    }

    private static final java.util.List<String> LEVELS = java.util.List.of("trace", "debug", "info", "warn", "error",
            "off");

    /**
     * Applies {@code levels} (logger name, or {@code root}, to level) until Spring takes over.
     *
     * @throws SidecarConfigException naming the key of a value that is not a level
     */
    static void levels(Map<String, String> levels) {
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        levels.forEach((name, level) -> {
            String l = level == null ? "" : level.strip().toLowerCase(Locale.ROOT);
            if (!LEVELS.contains(l)) {
                String near = ConfigKeys.closest(l, LEVELS);
                throw new SidecarConfigException("sidecar.logging.level." + name, level, "not a level: one of "
                        + String.join(", ", LEVELS) + (near == null ? "" : " (did you mean '" + near + "'?)"), null);
            }
            context.getLogger(name.equalsIgnoreCase("root") ? Logger.ROOT_LOGGER_NAME : name)
                    .setLevel(Level.toLevel(l));
        });
    }

    /** Spring Boot's {@code logging.*} settings for {@code logging}: the default levels, the file's, the format. */
    static Map<String, Object> springProperties(SidecarProperties.Logging logging) {
        Map<String, Object> p = new LinkedHashMap<>();
        Map<String, String> levels = new LinkedHashMap<>(DEFAULT_LEVELS);
        levels.putAll(logging.getLevel());
        levels.forEach((name, level) -> p.put("logging.level." + name, level));
        if (logging.getFormat() != SidecarProperties.LogFormat.TEXT) {
            p.put("logging.structured.format.console", logging.getFormat().name().toLowerCase(Locale.ROOT));
        }
        return p;
    }
}
