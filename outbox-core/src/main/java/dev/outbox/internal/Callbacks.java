package dev.outbox.internal;

import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxSample;
import dev.outbox.ParkedRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The dispatcher's one listener and its observers, called so that a callback that throws never disturbs the
 * engine: every exception is caught, counted ({@link #errors()}), and logged with its stack trace the first time
 * a callback of its kind ("listener.failure", "observer.acknowledged", …) throws; later ones of the same kind
 * are logged at DEBUG only, so a broken observer called once per record cannot flood the log.
 *
 * <p>As a {@link DispatcherObserver} it fans each event out to the registered observers. Thread-safe.
 */
final class Callbacks implements DispatcherObserver {
    private static final Logger log = LoggerFactory.getLogger(Callbacks.class);

    private final String name;
    private final DispatcherListener listener;
    private final CopyOnWriteArrayList<DispatcherObserver> observers = new CopyOnWriteArrayList<>();
    private final AtomicLong errors = new AtomicLong();
    private final Set<String> loggedKinds = ConcurrentHashMap.newKeySet();

    Callbacks(String name, DispatcherListener listener) {
        this.name = name;
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    void add(DispatcherObserver observer) {
        observers.addIfAbsent(Objects.requireNonNull(observer, "observer"));
    }

    void remove(DispatcherObserver observer) {
        observers.remove(observer);
    }

    /** Exceptions thrown by callbacks so far. */
    long errors() {
        return errors.get();
    }

    /** Calls the listener; {@code kind} names the event for the log ("leaderAcquired", …). */
    void listener(String kind, Consumer<DispatcherListener> event) {
        try {
            event.accept(listener);
        } catch (RuntimeException | LinkageError | AssertionError e) {
            failed("listener." + kind, listener, e);
        }
    }

    private void failed(String kind, Object callback, Throwable e) {
        errors.incrementAndGet();
        if (loggedKinds.add(kind)) {
            log.warn("{}: {} callback of {} threw; ignored (further errors of this kind are counted and logged at"
                    + " DEBUG only)", name, kind, callback.getClass().getName(), e);
        } else if (log.isDebugEnabled()) {
            log.debug("{}: {} callback of {} threw again; ignored", name, kind, callback.getClass().getName(), e);
        }
    }

    @Override
    public void marked(int rows, Duration duration) {
        for (DispatcherObserver o : observers) {
            try {
                o.marked(rows, duration);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.marked", o, e);
            }
        }
    }

    @Override
    public void purged(int rows, Duration duration) {
        for (DispatcherObserver o : observers) {
            try {
                o.purged(rows, duration);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.purged", o, e);
            }
        }
    }

    @Override
    public void sent(OutboxRecord record) {
        for (DispatcherObserver o : observers) {
            try {
                o.sent(record);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.sent", o, e);
            }
        }
    }

    @Override
    public void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
        for (DispatcherObserver o : observers) {
            try {
                o.acknowledged(record, sendToAck, commitToAck);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.acknowledged", o, e);
            }
        }
    }

    @Override
    public void failed(OutboxRecord record, Throwable error) {
        for (DispatcherObserver o : observers) {
            try {
                o.failed(record, error);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.failed", o, e);
            }
        }
    }

    @Override
    public void superseded(OutboxRecord record, long newerId) {
        for (DispatcherObserver o : observers) {
            try {
                o.superseded(record, newerId);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.superseded", o, e);
            }
        }
    }

    @Override
    public void parkedSuperseded(ParkedRecord record, long newerId) {
        for (DispatcherObserver o : observers) {
            try {
                o.parkedSuperseded(record, newerId);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.parkedSuperseded", o, e);
            }
        }
    }

    @Override
    public void parked(ParkedRecord record) {
        for (DispatcherObserver o : observers) {
            try {
                o.parked(record);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.parked", o, e);
            }
        }
    }

    @Override
    public void sampled(OutboxSample sample) {
        for (DispatcherObserver o : observers) {
            try {
                o.sampled(sample);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.sampled", o, e);
            }
        }
    }

    @Override
    public void statusChanged(DispatcherHealth.Status status) {
        for (DispatcherObserver o : observers) {
            try {
                o.statusChanged(status);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                failed("observer.statusChanged", o, e);
            }
        }
    }

    /** Whether any observer is registered: lets the engine skip measuring what nobody reads. */
    boolean observed() {
        return !observers.isEmpty();
    }
}
