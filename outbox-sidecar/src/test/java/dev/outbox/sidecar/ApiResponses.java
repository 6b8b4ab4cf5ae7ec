package dev.outbox.sidecar;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Assertions on the operator API's answers, and its credentials as headers, for the API tests. Stateless. */
final class ApiResponses {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private ApiResponses() {
    }

    /** Asserts a JSON error of {@code status} whose message is {@code message}. */
    static void assertError(HttpResponse<String> r, int status, String message) {
        assertThat(message(r, status)).isEqualTo(message);
    }

    /** The JSON error's message, after checking its status and shape (status, error, message, path). */
    static String message(HttpResponse<String> r, int status) {
        String what = r.request().method() + " " + r.request().uri() + " -> " + r.statusCode() + " " + r.body();
        assertThat(r.statusCode()).as(what).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).as(what).startsWith("application/json");
        JsonNode body = json(r);
        assertThat(body.get("status").asInt()).as(what).isEqualTo(status);
        assertThat(body.get("error").asString()).as(what).isNotBlank();
        assertThat(body.get("path").asString()).as(what).isEqualTo(r.request().uri().getPath());
        return body.get("message").asString();
    }

    /** The body of a 200 as JSON. */
    static JsonNode ok(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.request().uri() + " -> " + r.body()).isEqualTo(200);
        return json(r);
    }

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    /** {@code Authorization: Basic} for {@code user} and {@code password}. */
    static Map<String, String> basic(String user, String password) {
        return Map.of("Authorization", "Basic " + Base64.getEncoder().encodeToString((user + ":" + password)
                .getBytes(StandardCharsets.UTF_8)));
    }

    /** {@code Authorization: Bearer} with {@code token}. */
    static Map<String, String> bearer(String token) {
        return Map.of("Authorization", "Bearer " + token);
    }
}
