package dev.outbox.sidecar;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.support.GenericApplicationContext;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The sidecar's entry point: {@code java -jar outbox-sidecar.jar --config outbox.yaml}, or, before the first start,
 * {@code schema} (print the DDL) and {@code init} (apply it) as the first argument ({@link SchemaCommand}).
 *
 * <p>It reads and checks the configuration file, connects every inbox's pool and reads its failed-messages table
 * ({@link Inboxes}), connects every outbox's pool, builds its store and dispatcher and checks that its broker (Kafka or RabbitMQ) answers, all
 * before Spring starts, so that a bad configuration ends the process with exit status
 * {@value #CONFIG_ERROR_EXIT} and one line on standard error naming the key and its value. Then Spring Boot serves
 * health, Prometheus and the operator API and console, and runs the dispatchers. SIGTERM (or SIGINT) closes the
 * context: the web server stops, every dispatcher drains its in-flight records, and the process exits with 0.
 */
@SpringBootApplication(excludeName = {
        "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
        "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration"})
public class SidecarApplication {
    /** Exit status of a configuration error. */
    public static final int CONFIG_ERROR_EXIT = 2;
    /** Exit status of any other start-up failure. */
    public static final int STARTUP_FAILURE_EXIT = 1;

    /**
     * Starts the sidecar; see the class comment. Exits with {@value #CONFIG_ERROR_EXIT} on a configuration error
     * (one line naming the key), with {@value #STARTUP_FAILURE_EXIT} on another start-up failure.
     *
     * @param args {@code [schema|init] --config <file> [--outbox <name>]}: without a command, runs the sidecar
     *             until SIGTERM; {@code schema} prints each outbox's DDL, {@code init} creates the tables (both only
     *             for {@code --outbox} if given, and then exit). Options may also be written {@code --name=value}.
     */
    public static void main(String[] args) {
        Redaction.install(); // before the first logger: every line printed from here on is redacted
        SidecarLogging.configure();
        Path config;
        try {
            config = configPath(args);
        } catch (SidecarConfigException e) {
            fail(e.oneLine(), CONFIG_ERROR_EXIT);
            return;
        }
        if (args.length > 0 && (args[0].equals("schema") || args[0].equals("init"))) {
            int status;
            try {
                SidecarConfig.Loaded loaded = SidecarConfig.load(config);
                SidecarLogging.levels(loaded.properties().getLogging().getLevel());
                status = SchemaCommand.run(args[0], loaded.properties(), option(args, "--outbox"), new Secrets(),
                        System.out, System.err);
            } catch (SidecarConfigException e) {
                fail(e.oneLine(), CONFIG_ERROR_EXIT);
                return;
            }
            System.exit(status);
            return;
        }
        Outboxes outboxes;
        Inboxes inboxes = null;
        SidecarConfig.Loaded loaded;
        SidecarWebConfiguration.OperatorCredentials credentials;
        try {
            loaded = SidecarConfig.load(config);
            SidecarLogging.levels(loaded.properties().getLogging().getLevel());
            credentials = SidecarWebConfiguration.operatorCredentials(loaded.properties());
            inboxes = Inboxes.build(loaded.properties(), new Secrets());
            outboxes = Outboxes.build(loaded.properties(), loaded::raw, new Secrets());
        } catch (SidecarConfigException e) {
            if (inboxes != null) {
                inboxes.close();
            }
            fail(e.oneLine(), CONFIG_ERROR_EXIT);
            return;
        }
        Inboxes builtInboxes = inboxes;
        SidecarProperties properties = loaded.properties();
        credentials.log();
        SpringApplication app = new SpringApplication(SidecarApplication.class);
        app.setRegisterShutdownHook(false);
        app.setDefaultProperties(defaults(properties));
        app.addInitializers(context -> {
            GenericApplicationContext c = (GenericApplicationContext) context;
            c.registerBean(SidecarProperties.class, () -> properties);
            c.registerBean(Outboxes.class, () -> outboxes);
            c.registerBean(Inboxes.class, () -> builtInboxes);
            c.registerBean(SidecarWebConfiguration.OperatorCredentials.class, () -> credentials);
        });
        AtomicReference<ConfigurableApplicationContext> context = new AtomicReference<>();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> shutdown(context.get(), outboxes, builtInboxes),
                "outbox-sidecar-shutdown"));
        try {
            // No application.properties/yaml of the working directory: the configuration file is the only one.
            context.set(app.run("--spring.config.location=optional:classpath:/dev/outbox/sidecar/none/"));
        } catch (RuntimeException e) {
            outboxes.close();
            builtInboxes.close();
            fail("start-up failed: " + Outboxes.rootMessage(e), STARTUP_FAILURE_EXIT);
        }
    }

    /** The path after {@code --config}. */
    private static Path configPath(String[] args) {
        String path = option(args, "--config");
        if (path == null) {
            throw new SidecarConfigException("--config", null, "usage: java -jar outbox-sidecar.jar [schema|init]"
                    + " --config outbox.yaml [--outbox NAME]", null);
        }
        return Path.of(path);
    }

    /** The value of {@code --name value} or {@code --name=value}, or null. */
    private static String option(String[] args, String name) {
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals(name) && i + 1 < args.length) {
                return args[i + 1];
            }
            if (args[i].startsWith(name + "=")) {
                return args[i].substring(name.length() + 1);
            }
        }
        return null;
    }

    /** Spring's settings, derived from the sidecar's own keys (the file holds only {@code sidecar.*}). */
    private static Map<String, Object> defaults(SidecarProperties p) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.putAll(SidecarLogging.springProperties(p.getLogging()));
        d.put("spring.main.banner-mode", "off");
        d.put("spring.application.name", "outbox-sidecar");
        d.put("server.shutdown", "graceful");
        // Every 4xx says why in its body ("message"): the reasons name a parameter and its value, never a secret.
        d.put("spring.web.error.include-message", "always");
        d.put("server.port", p.getHttp().getPort());
        d.put("server.address", p.getHttp().getAddress());
        if (p.getManagement().getPort() != null) {
            d.put("management.server.port", p.getManagement().getPort());
            d.put("management.server.address", p.getManagement().getAddress());
        }
        d.put("management.endpoints.web.exposure.include", "health,prometheus");
        d.put("management.endpoint.health.probes.enabled", "true");
        d.put("management.endpoint.health.show-details", "always");
        d.put("management.endpoint.health.group.readiness.include", "readinessState,outboxReadiness");
        d.put("management.endpoint.health.group.liveness.include", "livenessState");
        return d;
    }

    /** On SIGTERM/SIGINT (or any other JVM exit): close the context, then end with status 0 unless already failing. */
    private static void shutdown(ConfigurableApplicationContext context, Outboxes outboxes, Inboxes inboxes) {
        if (FAILED.get() != null) {
            return;
        }
        try {
            if (context != null) {
                context.close();
            }
            outboxes.close();
            inboxes.close();
        } finally {
            System.out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(0);
        }
    }

    private static final AtomicReference<String> FAILED = new AtomicReference<>();

    private static void fail(String line, int status) {
        FAILED.set(line);
        System.err.println("outbox-sidecar: " + Redaction.redact(line));
        System.err.flush();
        System.exit(status);
    }
}
