package dev.outbox.store.mysql;

import java.util.regex.Pattern;

/**
 * The validated, quoted names of an outbox table and its parked table. Identifiers are checked against a strict
 * pattern before they are ever put into SQL, so that nothing a user configures can change a statement's meaning.
 * Immutable and thread-safe.
 */
final class TableNames {
    /** MySQL and MariaDB limit table and database names to 64 characters. */
    static final int MAX_IDENTIFIER_LENGTH = 64;
    static final String PARKED_SUFFIX = "_parked";
    /** Longest table name: its parked table's name must fit too. */
    static final int MAX_TABLE_LENGTH = MAX_IDENTIFIER_LENGTH - PARKED_SUFFIX.length();

    /**
     * Lower case only: whether MySQL table names are case-sensitive depends on the server's file system and
     * {@code lower_case_table_names}; a lower-case name means the same table everywhere.
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
                    + "' must fit MySQL's limit of " + MAX_IDENTIFIER_LENGTH + ")" : ""));
        }
        if (!IDENTIFIER.matcher(name).matches()) {
            throw new IllegalArgumentException(what + " name '" + name + "' is not a valid identifier: use lower"
                    + " case letters, digits and underscores, starting with a letter or underscore");
        }
        return name;
    }

    private static String quote(String identifier) {
        return '`' + identifier + '`';
    }

    /** The schema (database), or null when the tables are in the connection's current database. */
    String schema() {
        return schema;
    }

    /** The outbox table's bare name. */
    String table() {
        return table;
    }

    /** The parked table's bare name. */
    String parkedTable() {
        return table + PARKED_SUFFIX;
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
