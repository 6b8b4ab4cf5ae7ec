package dev.outbox.spring.app;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;

/**
 * {@link TestApplication} in a JVM of its own, for tests that kill it with SIGKILL: runs until its standard input
 * ends (or it is killed), printing {@code STARTED} once the context is up. Secrets come from the environment
 * (e.g. {@code SPRING_DATASOURCE_PASSWORD}), never from the command line.
 */
public final class StandaloneApplication {
    private StandaloneApplication() {
    }

    /**
     * Starts the application.
     *
     * @param args Spring Boot arguments ({@code --name=value})
     * @throws IOException if standard input fails
     */
    public static void main(String[] args) throws IOException {
        ConfigurableApplicationContext context = new SpringApplicationBuilder(TestApplication.class)
                .web(WebApplicationType.NONE).run(args);
        System.out.println("STARTED");
        System.out.flush();
        while (System.in.read() >= 0) {
            // wait for the end of standard input
        }
        context.close();
    }
}
