package dev.outbox.spring;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.util.ReflectionUtils;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * A method of a bean, called reflectively on the bean (its proxy, if it has one, so that {@code @Transactional} and
 * other advice apply). The bean is looked up at the first call, after the context was refreshed, never while
 * handlers are being found. Thread-safe.
 */
final class BeanMethod {
    private final BeanFactory beanFactory;
    private final String beanName;
    private final Method method;
    private volatile Object bean;
    private volatile Method invocable;

    BeanMethod(BeanFactory beanFactory, String beanName, Method method) {
        this.beanFactory = beanFactory;
        this.beanName = beanName;
        this.method = method;
    }

    Method method() {
        return method;
    }

    /** Calls the method; what it throws is thrown as it is (not wrapped). */
    Object invoke(Object... args) throws Exception {
        Object target = bean;
        Method m = invocable;
        if (target == null || m == null) {
            target = beanFactory.getBean(beanName);
            m = AopUtils.selectInvocableMethod(method, target.getClass());
            ReflectionUtils.makeAccessible(m);
            invocable = m;
            bean = target;
        }
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getTargetException();
            if (cause instanceof Exception ex) {
                throw ex;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }

    @Override
    public String toString() {
        return beanName + "." + method.getName() + "(" + method.getParameterCount() + " parameter"
                + (method.getParameterCount() == 1 ? "" : "s") + ")";
    }
}
