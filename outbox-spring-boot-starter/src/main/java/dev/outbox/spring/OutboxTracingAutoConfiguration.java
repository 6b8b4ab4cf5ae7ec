package dev.outbox.spring;

import dev.outbox.opentelemetry.TracingMessageDecorator;
import io.opentelemetry.api.OpenTelemetry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Traces the outbox's messages when {@code outbox-opentelemetry} is on the class path and the application has an
 * {@link OpenTelemetry} bean: a {@link TracingMessageDecorator} bean, which the starter applies to every message
 * written (as it applies every {@code MessageDecorator} bean), carries the writer's trace context in the message's
 * headers, so that a consumer continues the trace ({@code TracingRecordHandler} in a {@code KafkaInboxConsumer}).
 * {@code outbox.tracing.enabled=false} turns it off; {@code outbox.tracing.producer-spans=true} adds a PRODUCER span
 * per message. Backs off when the application defines its own {@link TracingMessageDecorator}.
 */
@AutoConfiguration(before = OutboxAutoConfiguration.class,
        afterName = "org.springframework.boot.opentelemetry.autoconfigure.OpenTelemetrySdkAutoConfiguration")
@ConditionalOnClass(name = {"dev.outbox.opentelemetry.TracingMessageDecorator", "io.opentelemetry.api.OpenTelemetry"})
@ConditionalOnBean(type = "io.opentelemetry.api.OpenTelemetry")
@ConditionalOnProperty(name = "outbox.tracing.enabled", matchIfMissing = true)
@EnableConfigurationProperties(OutboxProperties.class)
public class OutboxTracingAutoConfiguration {

    /**
     * The decorator that puts the writer's trace context into each message's headers.
     *
     * @param openTelemetry the application's OpenTelemetry, whose propagators write the headers
     * @param properties    the outbox's properties ({@code outbox.tracing.producer-spans})
     * @return the decorator
     */
    @Bean
    @ConditionalOnMissingBean
    TracingMessageDecorator outboxTracingDecorator(OpenTelemetry openTelemetry, OutboxProperties properties) {
        return TracingMessageDecorator.builder(openTelemetry)
                .producerSpans(properties.getTracing().isProducerSpans())
                .build();
    }
}
