package dev.outbox.spi;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SqlTableNamesTest {
    private static final SqlTableNames.Dialect POSTGRES = new SqlTableNames.Dialect("Postgres", 63, '"');
    private static final SqlTableNames.Dialect MYSQL = new SqlTableNames.Dialect("MySQL", 64, '`');

    @Test
    void quotesAndQualifiesWithTheDialectsQuoteCharacter() {
        SqlTableNames plain = POSTGRES.names(null, "outbox");
        assertThat(plain.schema()).isNull();
        assertThat(plain.table()).isEqualTo("outbox");
        assertThat(plain.parkedTable()).isEqualTo("outbox_parked");
        assertThat(plain.outbox()).isEqualTo("\"outbox\"");
        assertThat(plain.parked()).isEqualTo("\"outbox_parked\"");
        assertThat(plain).hasToString("\"outbox\"");

        SqlTableNames qualified = MYSQL.names("app", "events");
        assertThat(qualified.schema()).isEqualTo("app");
        assertThat(qualified.outbox()).isEqualTo("`app`.`events`");
        assertThat(qualified.parked()).isEqualTo("`app`.`events_parked`");
    }

    @Test
    void rejectsNamesThatAreNotPlainLowerCaseIdentifiersNamingThem() {
        for (String bad : List.of("Outbox", "out-box", "outbox; DROP TABLE users", "1outbox", "out box",
                "\"outbox\"", "`outbox`", "outbox\u0000", "é")) {
            for (SqlTableNames.Dialect dialect : List.of(POSTGRES, MYSQL)) {
                assertThatThrownBy(() -> dialect.validateTable(bad)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("table name '" + bad + "'")
                        .hasMessageContaining("not a valid identifier");
                assertThatThrownBy(() -> dialect.validateSchema(bad)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("schema name '" + bad + "'");
                assertThatThrownBy(() -> dialect.names(bad, "outbox")).hasMessageContaining("schema name '" + bad);
                assertThatThrownBy(() -> dialect.names(null, bad)).hasMessageContaining("table name '" + bad);
            }
        }
        assertThat(POSTGRES.validateTable("_a1_b2")).isEqualTo("_a1_b2");
        assertThatThrownBy(() -> POSTGRES.validateTable("")).hasMessage("table name must not be empty");
        assertThatThrownBy(() -> POSTGRES.validateTable(null)).hasMessage("table name must not be null");
        assertThatThrownBy(() -> MYSQL.validateSchema("")).hasMessage("schema name must not be empty");
        assertThatThrownBy(() -> MYSQL.validateSchema(null)).hasMessage("schema name must not be null");
    }

    @Test
    void leavesRoomForTheParkedSuffixWithinTheDialectsLimit() {
        assertThat(POSTGRES.maxIdentifierLength()).isEqualTo(63);
        assertThat(POSTGRES.maxTableLength()).isEqualTo(56);
        assertThat(MYSQL.maxTableLength()).isEqualTo(57);

        String longest = "t".repeat(56);
        assertThat(POSTGRES.names(null, longest).parked()).isEqualTo('"' + longest + "_parked\"");
        String tooLong = "t".repeat(57);
        assertThatThrownBy(() -> POSTGRES.validateTable(tooLong)).hasMessage("table name '" + tooLong
                + "' is 57 characters, longer than 56 (its parked table '" + tooLong
                + "_parked' must fit Postgres' limit of 63)");
        assertThat(MYSQL.validateTable(tooLong)).isEqualTo(tooLong);
        String tooLongForMySql = "t".repeat(58);
        assertThatThrownBy(() -> MYSQL.validateTable(tooLongForMySql)).hasMessage("table name '" + tooLongForMySql
                + "' is 58 characters, longer than 57 (its parked table '" + tooLongForMySql
                + "_parked' must fit MySQL's limit of 64)");

        assertThat(POSTGRES.validateSchema("s".repeat(63))).hasSize(63);
        String longSchema = "s".repeat(64);
        assertThatThrownBy(() -> POSTGRES.validateSchema(longSchema))
                .hasMessage("schema name '" + longSchema + "' is 64 characters, longer than 63");
    }

    @Test
    void rejectsABadDialectNamingTheValue() {
        assertThatThrownBy(() -> new SqlTableNames.Dialect(null, 63, '"')).hasMessageContaining("productName");
        assertThatThrownBy(() -> new SqlTableNames.Dialect(" ", 63, '"')).hasMessageContaining("' '");
        assertThatThrownBy(() -> new SqlTableNames.Dialect("X", 7, '"'))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(": 7");
        assertThatThrownBy(() -> new SqlTableNames.Dialect("X", 63, 'a')).hasMessageContaining("'a'");
        assertThatThrownBy(() -> new SqlTableNames.Dialect("X", 63, '_')).hasMessageContaining("'_'");
        assertThatThrownBy(() -> new SqlTableNames.Dialect("X", 63, '1')).hasMessageContaining("'1'");
    }
}
