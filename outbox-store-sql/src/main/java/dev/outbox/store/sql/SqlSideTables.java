package dev.outbox.store.sql;

import dev.outbox.spi.SqlTableNames;

/**
 * The tables an option adds beside the outbox ({@code <table>_key_seq}, {@code <table>_idempotency}): named after the
 * outbox table with a suffix, quoted and qualified the same way, within the database's identifier limit.
 */
final class SqlSideTables {
    private SqlSideTables() {
    }

    /**
     * The side table's name as it appears in SQL: the outbox table's, quoted and qualified the same way, with
     * {@code suffix} appended.
     */
    static String name(SqlTableNames names, String suffix) {
        String outbox = names.outbox();
        char quote = outbox.charAt(outbox.length() - 1);
        return outbox.substring(0, outbox.length() - 1) + suffix + quote;
    }

    /**
     * Checks that {@code table + suffix} fits the database's identifier limit.
     *
     * @param option what adds the table and how to turn it off, for the message: {@code "the key sequence on"}
     * @throws IllegalStateException naming the table, the option and the limit if it does not fit
     */
    static void checkLength(SqlTableNames.Dialect dialect, String table, String suffix, String option,
                            String off) {
        int max = dialect.maxIdentifierLength() - suffix.length();
        if (table.length() > max) {
            throw new IllegalStateException("table name '" + table + "' is " + table.length() + " characters: with "
                    + option + ", the table '" + table + suffix + "' must fit the database's identifier limit of "
                    + dialect.maxIdentifierLength() + ", so at most " + max + " characters (or " + off + ")");
        }
    }
}
