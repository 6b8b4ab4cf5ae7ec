package dev.outbox;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Which shard of a sharded outbox a record belongs to: a pure function of its key and the outbox's shard count,
 * so that every record of one key lands in one shard and per-key order needs no coordination between shards.
 *
 * <h2>The function</h2>
 * Take the MD5 digest of the key's UTF-8 bytes; read its first four bytes as an unsigned big-endian 32-bit
 * integer {@code h}; the shard is {@code h mod count}. In SQL, on Postgres:
 * {@code (('x' || substr(md5(key), 1, 8))::bit(32)::bigint % count)}; on MySQL and MariaDB:
 * {@code (conv(substr(md5(key), 1, 8), 16, 10) % count)}. The sharded stores compute it in the table (a generated
 * column), so plain-SQL writers need not; this class is the same function for Java code and tests. MD5 is used
 * for its spread and because both databases ship it, not for security.
 *
 * <p>Changing the count moves most keys to another shard: see the README's "Sharded harvest" for how a store
 * refuses a count that differs from its table's.
 */
public final class OutboxShards {

    /** The most shards an outbox may have (a shard is a Kafka partition and a metric tag). */
    public static final int MAX_SHARDS = 256;

    private static final ThreadLocal<MessageDigest> MD5 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no MD5, which every Java platform must provide", e);
        }
    });

    private OutboxShards() {
    }

    /**
     * The shard of {@code key} in an outbox of {@code count} shards.
     *
     * @param key   the message's key; not null
     * @param count the outbox's shard count
     * @return the shard, from 0 to {@code count} - 1; 0 for a count of 1
     * @throws IllegalArgumentException if {@code count} is not between 1 and {@link #MAX_SHARDS}
     * @throws NullPointerException     if {@code key} is null and {@code count} is above 1
     */
    public static int shardOf(String key, int count) {

        checkCount(count);
        if (count == 1) {
            return 0;
        }
        MessageDigest md5 = MD5.get();
        byte[] d = md5.digest(key.getBytes(StandardCharsets.UTF_8));
        long h = ((d[0] & 0xffL) << 24) | ((d[1] & 0xffL) << 16) | ((d[2] & 0xffL) << 8) | (d[3] & 0xffL);
        return (int) (h % count);
    }

    /**
     * Checks a shard count.
     *
     * @param count the count
     * @return {@code count}
     * @throws IllegalArgumentException naming the count if it is not between 1 and {@link #MAX_SHARDS}
     */
    public static int checkCount(int count) {
        if (count < 1 || count > MAX_SHARDS) {
            throw new IllegalArgumentException("shard count must be between 1 and " + MAX_SHARDS + ": " + count);
        }
        return count;
    }

    /**
     * Checks a shard index against a count.
     *
     * @param index the shard index
     * @param count the shard count
     * @return {@code index}

     * @throws IllegalArgumentException naming both if {@code index} is not in {@code [0, count)}
     */
    public static int checkIndex(int index, int count) {
        if (index < 0 || index >= count) {
            throw new IllegalArgumentException("shard index " + index + " is not in [0, " + count + ")");
        }
        return index;
    }
}
