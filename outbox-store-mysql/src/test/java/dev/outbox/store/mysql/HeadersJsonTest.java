package dev.outbox.store.mysql;

import dev.outbox.Header;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The headers column format, without a database: what the publisher writes and what rows by hand may hold. */
class HeadersJsonTest {

    @Test
    void noHeadersIsNullAndNullOrAnEmptyArrayReadsAsNone() {
        assertThat(HeadersJson.write(List.of())).isNull();
        assertThat(HeadersJson.read(null)).isEmpty();
        assertThat(HeadersJson.read("[]")).isEmpty();
        assertThat(HeadersJson.read(" [ ] ")).isEmpty();
    }

    @Test
    void writesCompactJsonWithBase64ValuesAndEscapedNames() {
        List<Header> headers = List.of(Header.of("trace", "abc"), Header.of("nul", (byte[]) null),
                Header.of("q\"uo\\te\n\u0001", new byte[]{0, -1}));

        String json = HeadersJson.write(headers);

        assertThat(json).isEqualTo("[{\"name\":\"trace\",\"value\":\"YWJj\"},{\"name\":\"nul\",\"value\":null},"
                + "{\"name\":\"q\\\"uo\\\\te\\n\\u0001\",\"value\":\"AP8=\"}]");
        assertThat(HeadersJson.read(json)).isEqualTo(headers);
    }

    @Test
    void randomHeadersRoundTrip() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        for (int round = 0; round < 500; round++) {
            List<Header> headers = new ArrayList<>();
            for (int h = random.nextInt(6); h > 0; h--) {
                StringBuilder name = new StringBuilder();
                for (int c = 1 + random.nextInt(12); c > 0; c--) {
                    int cp = random.nextInt(4) == 0 ? 0x1F600 + random.nextInt(50) : random.nextInt(0xD000);
                    name.appendCodePoint(cp);
                }
                byte[] value = random.nextInt(5) == 0 ? null : new byte[random.nextInt(200)];
                if (value != null) {
                    random.nextBytes(value);
                }
                headers.add(Header.of(name.toString(), value));
            }
            List<Header> back = HeadersJson.read(HeadersJson.write(headers));
            assertThat(back).as("seed %d, round %d", seed, round).isEqualTo(headers);
        }
    }

    @Test
    void readsWhatOtherWritersProduce() {
        // MySQL's JSON output (spaces after separators), escapes, an absent value, base64 broken into lines.
        assertThat(HeadersJson.read("[{\"name\": \"a\", \"value\": \"AQID\"}, {\"name\": \"b\"}]"))
                .containsExactly(Header.of("a", new byte[]{1, 2, 3}), Header.of("b", (byte[]) null));
        assertThat(HeadersJson.read("[{\"value\":\"eA==\",\"name\":\"\\u00e9\\ud83d\\ude00\\/\"}]"))
                .containsExactly(Header.of("é😀/", "x"));
        assertThat(HeadersJson.read("\n[\t{ \"name\" : \"n\" , \"value\" : \"YWJj\\nZGVm\" } ]\r\n"))
                .containsExactly(Header.of("n", "abcdef".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void rejectsAnythingElseNamingWhatIsWrong() {
        assertRejected("{\"name\": \"a\"}", "headers is not a JSON array");
        assertRejected("\"x\"", "headers is not a JSON array");
        assertRejected("[1]", "headers[0] is not a JSON object");
        assertRejected("[null]", "headers[0] is not a JSON object");
        assertRejected("[{}]", "headers[0] has no \"name\"");
        assertRejected("[{\"name\": null}]", "headers[0] has no \"name\"");
        assertRejected("[{\"name\": \"\"}]", "headers[0].name is empty");
        assertRejected("[{\"name\": true}]", "headers[0].name is not a string: true");
        assertRejected("[{\"name\": \"a\"}, {\"name\": \"b\", \"value\": 12}]", "headers[1].value is not a"
                + " base64 string or null: 12");
        assertRejected("[{\"name\": \"a\", \"value\": \"@@@\"}]", "is not valid base64");
        assertRejected("[{\"name\": \"a\", \"Value\": \"AA==\"}]", "unknown member 'Value'");
        assertRejected("[{\"name\": \"a\", \"name\": \"b\"}]", "Duplicate field 'name'");
        assertRejected("[{\"name\": \"a\"},]", "not valid JSON");
        assertRejected("[{\"name\": \"a\"}", "not valid JSON");
        assertRejected("[{\"name\": \"a\"}] x", "not valid JSON");
        assertRejected("[{\"name\": \"a\"}] []", "text after the JSON array");
        assertRejected("[{\"name\": \"a\\q\"}]", "not valid JSON");
        assertRejected("[{\"name\": \"a\u0001\"}]", "not valid JSON");
        assertRejected("[".repeat(100) + "]".repeat(100), "headers[0] is not a JSON object");
        assertRejected("", "headers is not a JSON array");
    }

    private static void assertRejected(String json, String reason) {
        assertThatThrownBy(() -> HeadersJson.read(json)).as(json).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(reason);
    }
}
