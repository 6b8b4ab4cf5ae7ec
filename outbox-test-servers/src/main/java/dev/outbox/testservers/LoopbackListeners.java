package dev.outbox.testservers;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/**
 * Keeps the embedded Kafka on the loopback address. {@link KafkaClusterTestKit} binds each node's listener sockets
 * before the nodes start (to know the controllers' ports up front), and it binds them to the wildcard address: the
 * broker and its controller would accept connections on every interface of the machine. This binds those sockets to
 * {@link InetAddress#getLoopbackAddress()} first, in the builder's socket manager, which then hands them to the
 * nodes as its own. The manager is not public API: a Kafka version that renames its fields fails the start here,
 * naming what changed, rather than listen on every interface. Stateless.
 */
final class LoopbackListeners {
    private LoopbackListeners() {
    }

    /** Binds every listener socket {@code builder} will create for {@code nodes} to the loopback address. */
    static void bind(KafkaClusterTestKit.Builder builder, TestKitNodes nodes) {
        try {
            Object manager = field(builder, "socketFactoryManager");
            @SuppressWarnings("unchecked")
            Map<Integer, Map<String, ServerSocketChannel>> sockets =
                    (Map<Integer, Map<String, ServerSocketChannel>>) field(manager, "sockets");
            String broker = nodes.brokerListenerName().value();
            String controller = nodes.controllerListenerName().value();
            for (int id : nodes.brokerNodes().keySet()) {
                bind(sockets, id, broker);
            }
            for (int id : nodes.controllerNodes().keySet()) {
                bind(sockets, id, controller);
            }
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new IllegalStateException("cannot bind the embedded Kafka's listeners to the loopback address:"
                    + " kafka-test-common-runtime's PreboundSocketFactoryManager changed (" + e + ")", e);
        } catch (IOException e) {
            throw new IllegalStateException("cannot bind a listener of the embedded Kafka to "
                    + InetAddress.getLoopbackAddress().getHostAddress() + ": " + e, e);
        }
    }

    private static void bind(Map<Integer, Map<String, ServerSocketChannel>> sockets, int node, String listener)
            throws IOException {
        Map<String, ServerSocketChannel> ofNode = sockets.computeIfAbsent(node, n -> new HashMap<>());
        if (ofNode.containsKey(listener)) {
            return;
        }
        ServerSocketChannel channel = ServerSocketChannel.open();
        try {
            channel.configureBlocking(false); // as Kafka's own ServerSocketFactory opens them
            channel.socket().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            channel.close();
            throw e;
        }
        ofNode.put(listener, channel);
    }

    private static Object field(Object owner, String name) throws ReflectiveOperationException {
        Field f = owner.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(owner);
    }
}
