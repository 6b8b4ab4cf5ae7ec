package dev.outbox.store.postgres;

import dev.outbox.spi.SqlTableNames;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The WAL harvest's names and writer DDL for one outbox: the logical message prefix the harvest reads, and the
 * SQL functions {@code <table>_wal_encode} and {@code <table>_emit} (the {@code wal.sql} resource of this package)
 * with which writers in any language emit messages in {@link WalCodec}'s format. For table {@code outbox} in schema
 * {@code app}: prefix {@code dev.outbox:app.outbox}, functions {@code app.outbox_wal_encode} and
 * {@code app.outbox_emit}.
 *
 * <p>Because Postgres would silently cut a longer function name to 63 bytes (and two outboxes could then share
 * one), a table name longer than {@value #MAX_TABLE_LENGTH} characters is refused here.
 *
 * <p>Stateless and thread-safe; a utility class.
 */
final class WalSql {
    /** The writer functions' DDL template. */
    static final String RESOURCE = "dev/outbox/store/postgres/wal.sql";
    /** Appended to the table's name to name the encoding function. */
    static final String ENCODE_SUFFIX = "_wal_encode";
    /** Appended to the table's name to name the emitting function. */
    static final String EMIT_SUFFIX = "_emit";
    /** What every prefix starts with. */
    static final String PREFIX_START = "dev.outbox:";
    /** The longest table name whose encoding function's name fits Postgres' 63-byte identifiers. */
    static final int MAX_TABLE_LENGTH = 63 - ENCODE_SUFFIX.length();

    /** What a prefix may contain: it is spliced into the DDL as a string literal. */
    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.:-]+");

    private WalSql() {
    }

    /**
     * The prefix of the logical messages of the outbox {@code names}: {@code "dev.outbox:" + schema + "." + table},
     * or {@code "dev.outbox:" + table} without a configured schema.
     */
    static String prefix(SqlTableNames names) {
        Objects.requireNonNull(names, "names must not be null");
        return PREFIX_START + (names.schema() == null ? "" : names.schema() + ".") + names.table();
    }

    /** The encoding function, {@code <table>_wal_encode}, quoted and (with a schema) qualified. */
    static String encodeFunction(SqlTableNames names) {
        return function(names, ENCODE_SUFFIX);
    }

    /** The emitting function, {@code <table>_emit}, quoted and (with a schema) qualified. */
    static String emitFunction(SqlTableNames names) {
        return function(names, EMIT_SUFFIX);
    }

    /**
     * The writer functions' DDL ({@link #RESOURCE}) for the outbox {@code names}, emitting with {@code prefix}
     * (normally {@link #prefix(SqlTableNames)}). Idempotent ({@code CREATE OR REPLACE}); needs the message-id
     * function of {@code schema.sql}, {@value PostgresStore#UUIDV7_FUNCTION}, to exist in the same schema.
     *
     * @throws IllegalArgumentException if the table name is longer than {@value #MAX_TABLE_LENGTH} characters, or
     *                                  the prefix is empty or holds a character other than ASCII letters, digits,
     *                                  {@code _ . : -}
     */
    static String render(SqlTableNames names, String prefix) {
        Objects.requireNonNull(names, "names must not be null");
        Objects.requireNonNull(prefix, "prefix must not be null");
        if (!PREFIX.matcher(prefix).matches()) {
            throw new IllegalArgumentException("WAL message prefix '" + prefix + "' must be non-empty ASCII letters,"
                    + " digits, '_', '.', ':' or '-'");
        }
        String template;
        try (InputStream in = WalSql.class.getClassLoader().getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + RESOURCE + " is missing from the classpath");
            }
            template = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + RESOURCE, e);
        }
        return template.replace("${wal_encode}", encodeFunction(names))
                .replace("${emit}", emitFunction(names))
                .replace("${uuidv7}", qualify(names, PostgresStore.UUIDV7_FUNCTION))
                .replace("${prefix}", "'" + prefix + "'");
    }

    private static String function(SqlTableNames names, String suffix) {
        Objects.requireNonNull(names, "names must not be null");
        if (names.table().length() > MAX_TABLE_LENGTH) {
            throw new IllegalArgumentException("table name '" + names.table() + "' is " + names.table().length()
                    + " characters, longer than " + MAX_TABLE_LENGTH + ", the longest the WAL harvest takes (its"
                    + " function '" + names.table() + ENCODE_SUFFIX + "' must fit Postgres' limit of 63)");
        }
        return qualify(names, names.table() + suffix);
    }

    /** The names were validated ([a-z_][a-z0-9_]*): quoting them is enough. */
    private static String qualify(SqlTableNames names, String name) {
        return (names.schema() == null ? "" : '"' + names.schema() + "\".") + '"' + name + '"';
    }
}
