package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.outbox.testkit.ReceivedMessage;
import dev.outbox.testservers.RabbitMqServer;
import dev.outbox.testservers.TestServers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/** The tests' side of the node: declaring topics as an exchange with one queue, and reading them back. */
final class RabbitMqTestSupport {
    private RabbitMqTestSupport() {
    }

    static RabbitMqServer rabbit() {
        return TestServers.rabbitMq();
    }

    static Connection connect() {
        ConnectionFactory f = new ConnectionFactory();
        try {
            f.setUri(rabbit().uri());
            f.setAutomaticRecoveryEnabled(false);
            return f.newConnection("outbox-test");
        } catch (Exception e) {
            throw new IllegalStateException("cannot connect to " + rabbit(), e);
        }
    }

    /** Runs {@code work} on a fresh channel of a fresh connection. */
    static <T> T withChannel(ChannelWork<T> work) {
        try (Connection c = connect(); Channel ch = c.createChannel()) {
            return work.run(ch);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    interface ChannelWork<T> {
        T run(Channel channel) throws IOException;
    }

    /** A fresh topic: a fanout exchange of that name with one durable queue of the same name bound to it. */
    static String newTopic(String prefix) {
        return newTopic(prefix, Map.of());
    }

    /** As {@link #newTopic(String)}, the queue declared with {@code queueArguments}. */
    static String newTopic(String prefix, Map<String, Object> queueArguments) {
        String topic = prefix + "-" + UUID.randomUUID();
        withChannel(ch -> {
            ch.exchangeDeclare(topic, "fanout", true);
            ch.queueDeclare(topic, true, false, false, queueArguments);
            ch.queueBind(topic, topic, "");
            return null;
        });
        return topic;
    }

    /**
     * Suspends the Erlang process of classic queue {@code queue}: messages routed to it wait in its mailbox, so
     * their confirms wait too, until {@link #resumeQueue}.
     */
    static void suspendQueue(String queue) {
        rabbit().rabbitmqctl("eval", "{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\""
                + queue + "\">>)), sys:suspend(amqqueue:get_pid(Q)).");
    }

    /** Lets a {@linkplain #suspendQueue suspended} queue run on. */
    static void resumeQueue(String queue) {
        rabbit().rabbitmqctl("eval", "{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\""
                + queue + "\">>)), sys:resume(amqqueue:get_pid(Q)).");
    }

    /**
     * Kills the node's process of every client connection at once ({@code exit(Pid, kill)}): clients see their
     * socket closed, as after a crash of the node's side, without the orderly {@code connection.close} of
     * {@code close_all_connections} — which waits, connection after connection, for channels whose queue is
     * {@linkplain #suspendQueue suspended}.
     */
    static void killAllConnections() {
        rabbit().rabbitmqctl("eval", "[exit(P, kill) || P <- rabbit_networking:connections()], ok.");
    }

    /** Reads (and acknowledges) what the topic's queue holds, until {@code expected} arrived or {@code timeout}. */
    static List<ReceivedMessage> readBack(String topic, int expected, Duration timeout) {
        return withChannel(ch -> {
            List<ReceivedMessage> out = new ArrayList<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (out.size() < expected && System.nanoTime() - deadline < 0) {
                GetResponse r = ch.basicGet(topic, true);
                if (r == null) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
                    continue;
                }
                out.add(new ReceivedMessage(topic, r.getEnvelope().getRoutingKey(),
                        RabbitMqHeaders.value(r.getProps(), r.getBody()), RabbitMqHeaders.headers(r.getProps())));
            }
            return out;
        });
    }
}
