package dev.outbox.testservers;

/**
 * How a test server was provided. Chosen by {@link TestServers} from system properties; tests never need to know,
 * but the log says which one each suite used.
 */
public enum ServerMode {
    /** Started by the test JVM from binaries or classes in Maven artifacts; files under {@code target/}. */
    EMBEDDED,
    /** Started in a Docker container through Testcontainers. */
    DOCKER,
    /** An existing server named by system properties; never stopped or restarted by the tests. */
    EXTERNAL
}
