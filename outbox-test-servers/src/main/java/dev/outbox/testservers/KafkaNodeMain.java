package dev.outbox.testservers;

/**
 * The main class of one node of {@link ProcessKafkaClusterBackend}, run in a child JVM: it halts the JVM as soon
 * as the test JVM that started it has gone (so that a test JVM killed by a timeout leaves no broker behind), then
 * runs Kafka's own server ({@code kafka.Kafka}) on the given properties file.
 *
 * <p>Arguments: the pid of the test JVM, the path of the node's {@code server.properties}.
 */
final class KafkaNodeMain {
    /** The exit status of a node whose test JVM has gone. */
    static final int ORPHANED = 3;

    private KafkaNodeMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: KafkaNodeMain <pid of the test JVM> <server.properties>");
            System.exit(2);
        }
        long parent = Long.parseLong(args[0]);
        ProcessHandle.of(parent).ifPresentOrElse(
                p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(ORPHANED)),
                () -> Runtime.getRuntime().halt(ORPHANED));
        kafka.Kafka.main(new String[] {args[1]});
    }
}
