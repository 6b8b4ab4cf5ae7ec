package dev.outbox.ci.spring;

import dev.outbox.spi.Store;
import dev.outbox.spring.OutboxPublisher;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionEvaluationReport;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * A Spring Boot application built from the published starter alone. It checks that the auto-configurations the
 * starter lists in {@code META-INF/spring/...AutoConfiguration.imports} load, then starts Boot with them: a
 * DataSource that refuses connections, the store type named (so nothing asks the database which it is) and no
 * dispatcher (it would connect to Kafka). Exits 0 when the outbox's store and publisher beans were auto-configured.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class SpringBootConsumer {
    private static final String IMPORTS =
            "META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports";

    /** The application's DataSource: nothing in the check may open a connection. */
    @Bean
    DataSource dataSource() {
        return (DataSource) Proxy.newProxyInstance(SpringBootConsumer.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getConnection" -> throw new SQLException(
                            "the staging check's consumer must not connect to a database, but something asked");
                    case "getLogWriter" -> (PrintWriter) null;
                    case "getLoginTimeout" -> 0;
                    case "getParentLogger" -> throw new SQLFeatureNotSupportedException();
                    case "unwrap" -> throw new SQLException("not a wrapper");
                    case "isWrapperFor" -> false;
                    case "toString" -> "a DataSource that refuses connections";
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> null;
                });
    }

    public static void main(String[] args) throws Exception {
        List<String> outboxConfigurations = new ArrayList<>();
        for (URL url : Collections.list(SpringBootConsumer.class.getClassLoader().getResources(IMPORTS))) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(url.openStream(),
                    StandardCharsets.UTF_8))) {
                r.lines().map(String::strip).filter(l -> l.startsWith("dev.outbox.")).forEach(outboxConfigurations::add);
            }
        }
        if (outboxConfigurations.isEmpty()) {
            throw new IllegalStateException("no dev.outbox auto-configuration is listed in any " + IMPORTS
                    + " on the class path: is outbox-spring-boot-starter's jar complete?");
        }
        for (String name : outboxConfigurations) {
            Class.forName(name, false, SpringBootConsumer.class.getClassLoader());
            System.out.println("listed and loadable: " + name);
        }

        SpringApplication app = new SpringApplication(SpringBootConsumer.class);
        app.setWebApplicationType(WebApplicationType.NONE);
        app.setDefaultProperties(Map.of(
                "outbox.store.type", "postgres",
                "outbox.dispatcher.enabled", "false",
                "spring.main.banner-mode", "off"));
        try (ConfigurableApplicationContext context = app.run(args)) {
            ConditionEvaluationReport report = ConditionEvaluationReport.get(context.getBeanFactory());
            for (String name : outboxConfigurations) {
                ConditionEvaluationReport.ConditionAndOutcomes outcomes =
                        report.getConditionAndOutcomesBySource().get(name);
                System.out.println("auto-configuration " + name + ": " + describe(outcomes));
            }
            Store store = context.getBean(Store.class);
            OutboxPublisher publisher = context.getBean(OutboxPublisher.class);
            System.out.println("store:     " + store);
            System.out.println("publisher: " + publisher);
        }
        System.out.println("spring-boot consumer: OK");
    }

    /** Applied, or the first condition that made it back off. */
    private static String describe(ConditionEvaluationReport.ConditionAndOutcomes outcomes) {
        if (outcomes == null) {
            return "not evaluated";
        }
        for (ConditionEvaluationReport.ConditionAndOutcome o : outcomes) {
            if (!o.getOutcome().isMatch()) {
                return "backed off: " + o.getOutcome().getMessage();
            }
        }
        return "applied";
    }
}
