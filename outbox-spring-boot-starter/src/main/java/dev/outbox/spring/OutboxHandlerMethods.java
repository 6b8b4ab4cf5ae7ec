package dev.outbox.spring;

import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.handlers.FallbackHandler;
import dev.outbox.handlers.HandlerMessageBroker;
import dev.outbox.handlers.MessageHandler;
import dev.outbox.spi.PayloadSerializer;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Finds the {@link OutboxHandler} and {@link OutboxFallbackHandler} methods of the application's beans (by their
 * types, without creating any bean) and registers them with a {@link HandlerMessageBroker}. A method whose
 * parameters or annotation do not fit is reported naming it. Stateless.
 */
final class OutboxHandlerMethods {

    private OutboxHandlerMethods() {
    }

    /**
     * The handlers broker of the application's annotated methods.
     *
     * @throws OutboxConfigurationException if no method is annotated, or one is annotated wrongly, naming it
     */
    static HandlerMessageBroker broker(ConfigurableListableBeanFactory beanFactory, PayloadSerializer serializer,
                                       OutboxHandlersProperties properties, String name) {
        HandlerMessageBroker.Builder b = HandlerMessageBroker.builder(serializer).name(name);
        OutboxProperties.set("outbox.handlers.threads", properties.getThreads(), b::threads);
        OutboxProperties.set("outbox.handlers.queue-capacity", properties.getQueueCapacity(), b::queueCapacity);
        OutboxProperties.set("outbox.handlers.timeout", properties.getTimeout(), b::handlerTimeout);
        OutboxProperties.set("outbox.handlers.type-header", properties.getTypeHeader(), b::typeHeader);
        int handlers = 0;
        for (String beanName : beanFactory.getBeanDefinitionNames()) {
            BeanDefinition definition = beanFactory.getBeanDefinition(beanName);
            if (definition.isAbstract()) {
                continue;
            }
            Class<?> type = beanFactory.getType(beanName, false);
            if (type == null) {
                continue;
            }
            Class<?> user = ClassUtils.getUserClass(type);
            if (AnnotationUtils.isCandidateClass(user, OutboxHandler.class)) {
                for (Map.Entry<Method, OutboxHandler> e : annotated(user, OutboxHandler.class).entrySet()) {
                    register(b, new BeanMethod(beanFactory, beanName, e.getKey()), e.getValue());
                    handlers++;
                }
            }
            if (AnnotationUtils.isCandidateClass(user, OutboxFallbackHandler.class)) {
                for (Map.Entry<Method, OutboxFallbackHandler> e : annotated(user, OutboxFallbackHandler.class).entrySet()) {
                    register(b, new BeanMethod(beanFactory, beanName, e.getKey()), e.getValue());
                }
            }
        }
        if (handlers == 0) {
            throw new OutboxConfigurationException("outbox.broker", "is 'handlers', but no bean has an @OutboxHandler"
                    + " method", "annotate the methods that handle outbox records with @OutboxHandler(topic = ...),"
                    + " or set outbox.broker=kafka", null);
        }
        return b.build();
    }

    private static <A extends java.lang.annotation.Annotation> Map<Method, A> annotated(Class<?> type, Class<A> a) {
        return MethodIntrospector.selectMethods(type, (MethodIntrospector.MetadataLookup<A>) m ->
                AnnotatedElementUtils.findMergedAnnotation(m, a));
    }

    private static void register(HandlerMessageBroker.Builder b, BeanMethod method, OutboxHandler a) {
        String where = "@OutboxHandler " + method.method().toGenericString();
        Signature s = signature(method.method(), where, false);
        if (s.payload < 0) {
            throw invalid(where, "has no payload parameter", "add the payload as a parameter");
        }
        Class<?> type = ClassUtils.resolvePrimitiveIfNecessary(method.method().getParameterTypes()[s.payload]);
        MessageHandler<Object> handler = (payload, record) -> method.invoke(s.args(payload, record, null));
        try {
            if (!a.topic().isEmpty() && a.type().isEmpty()) {
                b.handler(a.topic(), type, handler);
            } else if (a.topic().isEmpty() && !a.type().isEmpty()) {
                b.typeHandler(a.type(), type, handler);
            } else {
                throw invalid(where, "must set exactly one of topic and type", "set topic = \"...\" or type = \"...\"");
            }
        } catch (IllegalArgumentException e) {
            throw invalid(where, e.getMessage(), "keep one handler per topic and per type");
        }
    }

    private static void register(HandlerMessageBroker.Builder b, BeanMethod method, OutboxFallbackHandler a) {
        String where = "@OutboxFallbackHandler " + method.method().toGenericString();
        Signature s = signature(method.method(), where, true);
        Class<?> type = s.payload < 0 ? byte[].class
                : ClassUtils.resolvePrimitiveIfNecessary(method.method().getParameterTypes()[s.payload]);
        FallbackHandler<Object> fallback = (payload, record, parked) ->
                method.invoke(s.args(type.isInstance(payload) ? payload : null, record, parked));
        try {
            if (!a.topic().isEmpty() && a.type().isEmpty()) {
                b.fallback(a.topic(), type, fallback);
            } else if (a.topic().isEmpty() && !a.type().isEmpty()) {
                b.typeFallback(a.type(), type, fallback);
            } else if (a.topic().isEmpty()) {
                b.defaultFallback(fallback);
            } else {
                throw invalid(where, "must not set both topic and type", "set one of them, or neither for the"
                        + " fallback of every record without one of its own");
            }
        } catch (IllegalArgumentException e) {
            throw invalid(where, e.getMessage(), "keep one fallback per topic and per type");
        }
    }

    /** Where the payload, the record and the parked record go among the method's parameters (-1: nowhere). */
    private record Signature(int count, int payload, int record, int parked) {
        Object[] args(Object payloadValue, OutboxRecord recordValue, ParkedRecord parkedValue) {
            Object[] args = new Object[count];
            if (payload >= 0) {
                args[payload] = payloadValue;
            }
            if (record >= 0) {
                args[record] = recordValue;
            }
            if (parked >= 0) {
                args[parked] = parkedValue;
            }
            return args;
        }
    }

    private static Signature signature(Method m, String where, boolean fallback) {
        int payload = -1;
        int record = -1;
        int parked = -1;
        List<String> extra = new ArrayList<>();
        Class<?>[] types = m.getParameterTypes();
        for (int i = 0; i < types.length; i++) {
            if (types[i] == OutboxRecord.class && record < 0) {
                record = i;
            } else if (fallback && types[i] == ParkedRecord.class && parked < 0) {
                parked = i;
            } else if (payload < 0 && !types[i].isPrimitive()) {
                payload = i;
            } else {
                extra.add(types[i].getSimpleName());
            }
        }
        if (!extra.isEmpty()) {
            throw invalid(where, "has parameters it cannot be given: " + extra, "take the payload, "
                    + (fallback ? "the ParkedRecord, " : "") + "and the OutboxRecord, each at most once");
        }
        return new Signature(types.length, payload, record, parked);
    }

    private static OutboxConfigurationException invalid(String where, String problem, String fix) {
        return new OutboxConfigurationException("outbox.broker", where + " " + problem, fix, null);
    }
}
