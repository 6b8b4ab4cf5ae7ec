package dev.outbox.spring;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Registers {@link OutboxHealthIndicator} as the {@code outbox} health contributor when Spring Boot's health
 * support is present and a dispatcher runs; {@code management.health.outbox.enabled=false} turns it off.
 */
@AutoConfiguration(after = OutboxAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(OutboxDispatcherLifecycle.class)
@ConditionalOnEnabledHealthIndicator("outbox")
public class OutboxHealthAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "outboxHealthIndicator")
    OutboxHealthIndicator outboxHealthIndicator(OutboxDispatcherLifecycle lifecycle) {
        return new OutboxHealthIndicator(lifecycle.dispatcher());
    }
}
