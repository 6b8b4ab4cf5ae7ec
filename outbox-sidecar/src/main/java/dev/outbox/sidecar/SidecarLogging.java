package dev.outbox.sidecar;

import org.slf4j.bridge.SLF4JBridgeHandler;

import java.util.Map;

/**
 * The sidecar's logging: slf4j-simple, configured by system properties before the first logger is created. Lines go
 * to standard error with a timestamp; {@code -Dorg.slf4j.simpleLogger.*} on the command line wins over these
 * defaults. Spring Boot's own failure reports are off: a start-up failure is reported as one line by
 * {@link SidecarApplication}. Stateless.
 */
final class SidecarLogging {
    private static final Map<String, String> DEFAULTS = Map.ofEntries(
            Map.entry("org.slf4j.simpleLogger.defaultLogLevel", "info"),
            Map.entry("org.slf4j.simpleLogger.showDateTime", "true"),
            Map.entry("org.slf4j.simpleLogger.dateTimeFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSZ"),
            Map.entry("org.slf4j.simpleLogger.log.org.apache.kafka", "warn"),
            Map.entry("org.slf4j.simpleLogger.log.org.apache.kafka.clients.NetworkClient", "error"),
            Map.entry("org.slf4j.simpleLogger.log.org.apache.kafka.clients.admin", "error"),
            Map.entry("org.slf4j.simpleLogger.log.com.zaxxer.hikari", "warn"),
            Map.entry("org.slf4j.simpleLogger.log.org.springframework", "warn"),
            Map.entry("org.slf4j.simpleLogger.log.org.springframework.boot.SpringApplication", "off"),
            Map.entry("org.slf4j.simpleLogger.log.org.springframework.boot.diagnostics", "off"),
            Map.entry("org.slf4j.simpleLogger.log.org.apache.catalina", "warn"),
            Map.entry("org.slf4j.simpleLogger.log.org.apache.tomcat", "warn"),
            Map.entry("org.slf4j.simpleLogger.log.org.apache.coyote", "warn"),
            // Spring Boot's logging system needs Logback or Log4j; the sidecar logs through slf4j-simple.
            Map.entry("org.springframework.boot.logging.LoggingSystem", "none"),
            // Spring logs through commons-logging; its SLF4J binding tags every line with a marker that
            // slf4j-simple prints. Through java.util.logging (bridged below) the lines look like every other.
            Map.entry("org.apache.commons.logging.LogFactory", "org.apache.commons.logging.impl.LogFactoryImpl"),
            Map.entry("org.apache.commons.logging.Log", "org.apache.commons.logging.impl.Jdk14Logger"));

    private SidecarLogging() {
    }

    static void configure() {
        DEFAULTS.forEach((k, v) -> {
            if (System.getProperty(k) == null) {
                System.setProperty(k, v);
            }
        });
        SLF4JBridgeHandler.removeHandlersForRootLogger();
        SLF4JBridgeHandler.install();
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.INFO);
    }
}
