package dev.outbox.spring;

import dev.outbox.micrometer.OutboxMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Registers the dispatcher's {@link OutboxMetrics} (a {@code MeterBinder}, which Spring Boot binds to the
 * application's {@code MeterRegistry}) when {@code outbox-micrometer} and Micrometer are on the class path and a
 * dispatcher runs. The {@code outbox} tag is the outbox table's name.
 */
@AutoConfiguration(after = OutboxAutoConfiguration.class)
@ConditionalOnClass({OutboxMetrics.class, MeterRegistry.class})
@ConditionalOnBean(OutboxDispatcherLifecycle.class)
public class OutboxMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    OutboxMetrics outboxMetrics(OutboxDispatcherLifecycle lifecycle, OutboxProperties properties) {
        return new OutboxMetrics(lifecycle.dispatcher(), properties.getStore().getTable());
    }
}
