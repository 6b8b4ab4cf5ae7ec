package dev.outbox.spi;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The validated, quoted names of a SQL store's outbox table and its parked table, for the stores to share.
 *
 * <p>Contract: a user-configured schema or table name is checked before it is ever put into SQL, so that nothing
 * a user configures can change a statement's meaning. A name must be non-empty and match
 * {@code [a-z_][a-z0-9_]*} (lower case only: unquoted names fold to one case and some servers' table names are
 * case-sensitive, so a lower-case name means the same table everywhere, quoted or not). A schema may be as long
 * as the database's identifier limit; a table must leave room for {@value #PARKED_SUFFIX}, since its parked
 * table is named {@code table + "_parked"}. Every error is an {@link IllegalArgumentException} naming the bad
 * value. The names then appear in SQL quoted with the database's quote character and, if a schema was given,
 * qualified by it.
 *
 * <p>What differs between databases is data, held by a {@link Dialect}: the identifier length limit, the quote
 * character and the product name used in messages.
 *
 * <p>Immutable and thread-safe.
 */
public final class SqlTableNames {
    /** Appended to the outbox table's name to name its parked table. */
    public static final String PARKED_SUFFIX = "_parked";
    /**
     * Appended to the outbox table's name to name its leader table (storage fencing's epoch); as long as
     * {@link #PARKED_SUFFIX}, so that every valid table name leaves room for it.
     */
    public static final String LEADER_SUFFIX = "_leader";
    /**
     * Appended to the outbox table's name to name its lease table (leader election in the database); shorter than
     * {@link #PARKED_SUFFIX}, so that every valid table name leaves room for it.
     */
    public static final String LEASE_SUFFIX = "_lease";

    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]*");

    private final String schema;
    private final String table;
    private final String outbox;
    private final String parked;
    private final String leader;
    private final String lease;

    private SqlTableNames(Dialect dialect, String schema, String table) {
        this.schema = schema == null ? null : dialect.validateSchema(schema);
        this.table = dialect.validateTable(table);
        String prefix = schema == null ? "" : dialect.quote(schema) + ".";
        this.outbox = prefix + dialect.quote(table);
        this.parked = prefix + dialect.quote(table + PARKED_SUFFIX);
        this.leader = prefix + dialect.quote(table + LEADER_SUFFIX);
        this.lease = prefix + dialect.quote(table + LEASE_SUFFIX);
    }

    /**
     * The schema as configured (bare), or null when the tables are found through the connection's defaults.
     *
     * @return the schema's bare name, or null
     */
    public String schema() {
        return schema;
    }

    /**
     * The outbox table's bare name.
     *
     * @return the name, unquoted and unqualified
     */
    public String table() {
        return table;
    }

    /**
     * The parked table's bare name.
     *
     * @return the outbox table's name with {@value #PARKED_SUFFIX} appended
     */
    public String parkedTable() {
        return table + PARKED_SUFFIX;
    }

    /**
     * The leader table's bare name (storage fencing's epoch).
     *
     * @return the outbox table's name with {@value #LEADER_SUFFIX} appended
     */
    public String leaderTable() {
        return table + LEADER_SUFFIX;
    }

    /**
     * The leader table as it appears in SQL: quoted and, if a schema was given, qualified.
     *
     * @return the name in SQL
     */
    public String leader() {
        return leader;
    }

    /**
     * The lease table's bare name (leader election in the database).
     *
     * @return the outbox table's name with {@value #LEASE_SUFFIX} appended
     */
    public String leaseTable() {
        return table + LEASE_SUFFIX;
    }

    /**
     * The lease table as it appears in SQL: quoted and, if a schema was given, qualified.
     *
     * @return the name in SQL
     */
    public String lease() {
        return lease;
    }

    /**
     * The outbox table as it appears in SQL: quoted and, if a schema was given, qualified.
     *
     * @return the name in SQL
     */
    public String outbox() {
        return outbox;
    }

    /**
     * The parked table as it appears in SQL: quoted and, if a schema was given, qualified.
     *
     * @return the name in SQL
     */
    public String parked() {
        return parked;
    }

    /** The outbox table as it appears in SQL. */
    @Override
    public String toString() {
        return outbox;
    }

    /**
     * A database's rules for identifiers, as data: its identifier length limit, its quote character and its name
     * for error messages. Immutable and thread-safe.
     */
    public static final class Dialect {
        private final String productName;
        private final int maxIdentifierLength;
        private final char quote;

        /**
         * @param productName         the database's name as error messages show it, e.g. {@code "Postgres"}
         * @param maxIdentifierLength the longest identifier the database keeps whole; more than
         *                            {@value #PARKED_SUFFIX}'s length, so that a table name fits
         * @param quote               the character that quotes identifiers, e.g. {@code '"'}; not one allowed in
         *                            a name
         */
        public Dialect(String productName, int maxIdentifierLength, char quote) {
            Objects.requireNonNull(productName, "productName must not be null");
            if (productName.isBlank()) {
                throw new IllegalArgumentException("productName must not be blank: '" + productName + "'");
            }
            if (maxIdentifierLength <= PARKED_SUFFIX.length()) {
                throw new IllegalArgumentException("maxIdentifierLength must be more than "
                        + PARKED_SUFFIX.length() + ": " + maxIdentifierLength);
            }
            if (IDENTIFIER.matcher(String.valueOf(quote)).matches() || Character.isDigit(quote)) {
                throw new IllegalArgumentException("quote must not be a character allowed in a name: '" + quote
                        + "'");
            }
            this.productName = productName;
            this.maxIdentifierLength = maxIdentifierLength;
            this.quote = quote;
        }

        /**
         * The longest schema name.
         *
         * @return the database's identifier length limit, in characters
         */
        public int maxIdentifierLength() {
            return maxIdentifierLength;
        }

        /**
         * The longest table name: its parked table's name must fit the identifier limit too.
         *
         * @return {@link #maxIdentifierLength()} less the length of {@value #PARKED_SUFFIX}
         */
        public int maxTableLength() {
            return maxIdentifierLength - PARKED_SUFFIX.length();
        }

        /**
         * Validates a schema name.
         *
         * @param schema the bare name
         * @return {@code schema}, unchanged
         * @throws IllegalArgumentException naming the value if it is null, empty, too long or not a valid name
         */
        public String validateSchema(String schema) {
            return validate("schema", schema, maxIdentifierLength);
        }

        /**
         * Validates an outbox table's name, leaving room for {@value #PARKED_SUFFIX}.
         *
         * @param table the bare name
         * @return {@code table}, unchanged
         * @throws IllegalArgumentException naming the value if it is null, empty, too long or not a valid name
         */
        public String validateTable(String table) {
            return validate("table", table, maxTableLength());
        }

        /**
         * Validates both names and returns them quoted for SQL.
         *
         * @param schema the schema, or null for the connection's default
         * @param table  the outbox table's name
         * @return the validated names, quoted
         * @throws IllegalArgumentException naming the value if either is invalid
         */
        public SqlTableNames names(String schema, String table) {

            return new SqlTableNames(this, schema, table);
        }

        private String validate(String what, String name, int maxLength) {
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
                        + "' must fit " + possessive(productName) + " limit of " + maxIdentifierLength + ")" : ""));
            }
            if (!IDENTIFIER.matcher(name).matches()) {
                throw new IllegalArgumentException(what + " name '" + name + "' is not a valid identifier: use"
                        + " lower case letters, digits and underscores, starting with a letter or underscore");
            }
            return name;
        }

        private String quote(String identifier) {
            return quote + identifier + quote;
        }

        private static String possessive(String noun) {
            return noun.endsWith("s") ? noun + "'" : noun + "'s";
        }

        @Override
        public String toString() {
            return "SqlTableNames.Dialect{" + productName + ", maxIdentifierLength=" + maxIdentifierLength
                    + ", quote=" + quote + '}';
        }
    }
}
