package dev.outbox.sidecar;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.security.authentication.BadCredentialsException;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.access.AccessDeniedHandler;
import org.springframework.security.web.csrf.CsrfException;

/**
 * Who is refused how, with a reason in the body (see {@link OperatorErrors}):
 * <ul>
 *   <li>401 with {@code WWW-Authenticate} (Basic and/or Bearer, as configured): the API without any credential, or
 *       with a wrong one. A request without credentials is not checked for the CSRF token: it cannot act as anyone
 *       ({@link #withoutCredentials}), so it gets the 401 whatever its method;</li>
 *   <li>403: a credential (basic, or a session's cookie) on a state-changing request without the CSRF token, or
 *       with a wrong one; the body says where to get the token.</li>
 * </ul>
 * Thread-safe.
 */
final class OperatorAuthentication {
    /** The realm of the challenges. */
    static final String REALM = "outbox-sidecar";

    private OperatorAuthentication() {
    }

    /**
     * Whether {@code request} carries no credential at all: no {@code Authorization} header and no cookie of a live
     * session. Such a request is not forged with the browser's ambient credentials, so it needs no CSRF token.
     */
    static boolean withoutCredentials(HttpServletRequest request) {
        return request.getHeader(HttpHeaders.AUTHORIZATION) == null
                && (request.getRequestedSessionId() == null || !request.isRequestedSessionIdValid());
    }

    /** The API's 401: a challenge per configured way to authenticate, and what was wrong. */
    static AuthenticationEntryPoint api(SidecarWebConfiguration.OperatorCredentials c) {
        return (request, response, e) -> {
            challenge(response, c, null);
            String ways = (c.username() != null ? "HTTP basic" : "") + (c.username() != null && c.token() != null
                    ? " or " : "") + (c.token() != null ? "a bearer token" : "");
            response.sendError(HttpStatus.UNAUTHORIZED.value(), e instanceof BadCredentialsException
                    ? "the user name or password is not right" : c.enabled() ? "authentication required: " + ways
                    : "the operator API is off: no sidecar.operator credentials are configured");
        };
    }

    /** The 401 of a bearer token that is not the configured one. */
    static void badToken(HttpServletResponse response, SidecarWebConfiguration.OperatorCredentials c)
            throws java.io.IOException {
        challenge(response, c, "invalid_token");
        response.sendError(HttpStatus.UNAUTHORIZED.value(), "the bearer token is not the configured one");
    }

    private static void challenge(HttpServletResponse response, SidecarWebConfiguration.OperatorCredentials c,
                                  String bearerError) {
        if (c.username() != null) {
            response.addHeader(HttpHeaders.WWW_AUTHENTICATE, "Basic realm=\"" + REALM + "\", charset=\"UTF-8\"");
        }
        if (c.token() != null) {
            response.addHeader(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"" + REALM + "\""
                    + (bearerError == null ? "" : ", error=\"" + bearerError + "\""));
        }
    }

    /** The 403s: a missing or wrong CSRF token (and where to get one), or an operator refused something else. */
    static AccessDeniedHandler denied() {
        return (request, response, e) -> {
            String reason;
            if (e instanceof CsrfException) {
                reason = request.getRequestURI().startsWith("/api/")
                        ? "the CSRF token is missing or wrong: a state-changing request authenticated by HTTP basic"
                        + " or a session sends the token of GET /api/csrf in the header X-CSRF-TOKEN, with the"
                        + " session's cookie (a request with the bearer token needs none)"
                        : "the CSRF token is missing or wrong: the form is from an expired session; reload the page";
            } else {
                reason = "access denied: " + e.getMessage();
            }
            response.sendError(HttpStatus.FORBIDDEN.value(), reason);
        };
    }
}
