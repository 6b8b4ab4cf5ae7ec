package dev.outbox.store.postgres;

import java.util.regex.Pattern;

/**
 * The validated, quoted names of an outbox table and its parked table. Identifiers are checked against a strict
 * pattern before they are ever put into SQL, so that nothing a user configures can change a statement's meaning.
 * Immutable and thread-safe.
 */
final class TableNames {
    /** Postgres truncates identifiers to 63 bytes (NAMEDATALEN - 1). */
    static final int MAX_IDENTIFIER_LENGTH = 63;
    static final String PARKED_SUFFIX = "_parked";
    /** Longest table name: its parked table's name must fit too. */
    static final int MAX_TABLE_LENGTH = MAX_IDENTIFIER_LENGTH - PARKED_SUFFIX.length();

    /**
     * Lower case only: unquoted names in SQL fold to lower case, so a lower-case name means the same whether a
     * user's own SQL quotes it or not.
     */
    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]*");

    private final String schema;
    private final String table;
    private final String outbox;
    private final String parked;

    TableNames(String schema, String table) {
        this.schema = schema == null ? null : validate("schema", schema, MAX_IDENTIFIER_LENGTH);
        this.table = validate("table", table, MAX_TABLE_LENGTH);
        String prefix = schema == null ? "" : quote(schema) + ".";
        this.outbox = prefix + quote(table);
        this.parked = prefix + quote(table + PARKED_SUFFIX);
    }

    static String validate(String what, String name, int maxLength) {
        if (name == null) {
            throw new IllegalArgumentException(what + " name must not be null");
        }
        if (name.isEmpty()) {
            throw new IllegalArgumentException(what + " name must not be empty");
        }
        if (name.length() > maxLength) {
            throw new IllegalArgumentException(what + " name '" + name + "' is " + name.length()
                    + " characters, longer than " + maxLength
                    + (what.equals("table") ? " (its parked table '" + name + PARKED_SUFFIX
                    + "' must fit Postgres' limit of " + MAX_IDENTIFIER_LENGTH + ")" : ""));
        }
        if (!IDENTIFIER.matcher(name).matches()) {
            throw new IllegalArgumentException(what + " name '" + name + "' is not a valid identifier: use lower"
                    + " case letters, digits and underscores, starting with a letter or underscore");
        }
        return name;
    }

    private static String quote(String identifier) {
        return '"' + identifier + '"';
    }

    /** The schema, or null when the table is found through the connection's {@code search_path}. */
    String schema() {
        return schema;
    }

    String table() {
        return table;
    }

    /** The outbox table as it appears in SQL: quoted and, if a schema was given, qualified. */
    String outbox() {
        return outbox;
    }

    /** The parked table as it appears in SQL. */
    String parked() {
        return parked;
    }

    @Override
    public String toString() {
        return outbox;
    }
}
