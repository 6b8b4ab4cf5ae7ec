package dev.outbox.sidecar;

import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;

import tools.jackson.core.JacksonException;

import java.io.IOException;
import java.util.List;

/**
 * The operator API's and the console's 400s for requests Spring cannot bind, with a reason naming the parameter and
 * the value given. Every error of the sidecar (these, the {@code ResponseStatusException}s of {@link OperatorApi},
 * {@link ParkedOperations}, {@link ParkedFilter}, {@link InboxApi} and {@link InboxFailures}, and the security
 * filters' 401s and 403s, see {@link OperatorAuthentication}) is sent with {@code sendError(status, reason)} and
 * rendered by Spring Boot's error controller: JSON {@code {"timestamp", "status", "error", "message", "path"}} for
 * the API, a page for a browser.
 * Thread-safe.
 */
@ControllerAdvice(assignableTypes = {OperatorApi.class, OperatorConsole.class, ConsoleActions.class, InboxApi.class,
        InboxConsole.class})
class OperatorErrors {

    /** A query parameter or path variable that is not of its type: {@code limit must be a whole number: 'ten'}. */
    @ExceptionHandler(MethodArgumentTypeMismatchException.class)
    void typeMismatch(MethodArgumentTypeMismatchException e, HttpServletResponse response) throws IOException {
        Class<?> type = e.getRequiredType();
        String expected = type == int.class || type == long.class || type == Integer.class || type == Long.class
                ? "a whole number" : "a " + (type == null ? "value of its type" : type.getSimpleName());
        response.sendError(HttpStatus.BAD_REQUEST.value(), e.getName() + " must be " + expected + ": '" + e.getValue()
                + "'");
    }

    /** A required query or form parameter that is missing. */
    @ExceptionHandler(MissingServletRequestParameterException.class)
    void missing(MissingServletRequestParameterException e, HttpServletResponse response) throws IOException {
        response.sendError(HttpStatus.BAD_REQUEST.value(), e.getParameterName() + " is required");
    }

    /** A body that is missing or not the JSON expected: the field (as {@code filter.topic}) and Jackson's reason. */
    @ExceptionHandler(HttpMessageNotReadableException.class)
    void unreadable(HttpMessageNotReadableException e, HttpServletResponse response) throws IOException {
        Throwable cause = e.getMostSpecificCause();
        String detail;
        if (cause instanceof JacksonException j && !j.getPath().isEmpty()) {
            detail = path(j.getPath()) + " is not valid: " + j.getOriginalMessage();
        } else {
            detail = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
        }
        int newline = detail.indexOf('\n');
        response.sendError(HttpStatus.BAD_REQUEST.value(), "the request body must be JSON such as {\"ids\":[42]} or"
                + " {\"filter\":{\"topic\":\"orders\"},\"expected\":3}; " + (newline < 0 ? detail
                : detail.substring(0, newline)).strip());
    }

    /** {@code filter.topic}, {@code ids[2]}. */
    private static String path(List<JacksonException.Reference> path) {
        StringBuilder b = new StringBuilder();
        for (JacksonException.Reference r : path) {
            if (r.getPropertyName() != null) {
                b.append(b.isEmpty() ? "" : ".").append(r.getPropertyName());
            } else if (r.getIndex() >= 0) {
                b.append('[').append(r.getIndex()).append(']');
            }
        }
        return b.toString();
    }
}
