package dev.outbox.store.sql;

import dev.outbox.spi.StoreException;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What a table's generated {@code shard} column says of its shard count, as every SQL store reads it. Stateless. */
final class ShardColumn {
    private static final Pattern MODULUS = Pattern.compile("(?:%|\\bmod\\b)\\s*\\(*\\s*(\\d+)",
            Pattern.CASE_INSENSITIVE);

    private ShardColumn() {
    }

    /**
     * The shard count a {@code shard} column's generation expression stands for: the number after its last
     * {@code %} (or {@code MOD}), as Postgres, MySQL and MariaDB print the expression the stores create.
     *
     * @throws StoreException (not retriable) naming the expression if it holds no such number
     */
    static int countOf(String expression) {
        Matcher m = MODULUS.matcher(expression);
        String count = null;
        while (m.find()) {
            count = m.group(1);
        }
        if (count == null || !expression.toLowerCase(Locale.ROOT).contains("md5")) {
            throw new StoreException("cannot tell the shard count from the shard column's expression " + expression
                    + ": it is not the md5-of-the-key modulo a count that the store creates", null, false);
        }
        return Integer.parseInt(count);
    }
}
