package dev.outbox.spring.modulith;

import dev.outbox.spi.PayloadSerializer;
import dev.outbox.spring.OutboxPublisher;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.modulith.events.EventExternalizationConfiguration;
import org.springframework.modulith.events.ExternalizationMode;

/**
 * Registers the {@link ModulithOutboxRecorder} when Spring Modulith is told to hand its externalized events to an
 * outbox ({@code spring.modulith.events.externalization.mode=outbox}) and the outbox starter configured an
 * {@link OutboxPublisher}. Modulith then registers none of its own externalizers; its event publication registry
 * still records and completes the publications of the application's transactional listeners
 * ({@code @ApplicationModuleListener}).
 */
@AutoConfiguration(afterName = {
        "org.springframework.modulith.events.config.EventExternalizationAutoConfiguration",
        "dev.outbox.spring.OutboxAutoConfiguration"})
@ConditionalOnProperty(name = ExternalizationMode.PROPERTY, havingValue = "outbox")
@ConditionalOnProperty(name = "spring.modulith.events.externalization.enabled", havingValue = "true",
        matchIfMissing = true)
@ConditionalOnBean({OutboxPublisher.class, EventExternalizationConfiguration.class})
public class OutboxModulithAutoConfiguration {

    /** Creates the auto-configuration; Spring Boot does, when the conditions above hold. */
    public OutboxModulithAutoConfiguration() {
    }

    /**
     * The recorder writing externalized events into the outbox.
     *
     * @param configuration Modulith's externalization configuration
     * @param outbox        the starter's publisher
     * @param serializer    the starter's payload serializer
     * @param beanFactory   for {@code @bean} references in routing expressions
     * @return the recorder
     */
    @Bean
    ModulithOutboxRecorder outboxModulithRecorder(EventExternalizationConfiguration configuration,
                                                  OutboxPublisher outbox, PayloadSerializer serializer,
                                                  BeanFactory beanFactory) {
        StandardEvaluationContext context = new StandardEvaluationContext();
        context.setBeanResolver(new BeanFactoryResolver(beanFactory));
        return new ModulithOutboxRecorder(configuration, outbox, serializer, context);
    }
}
