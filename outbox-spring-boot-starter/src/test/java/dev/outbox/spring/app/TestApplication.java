package dev.outbox.spring.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The application the starter's tests run: an orders service writing with JdbcTemplate or JPA. */
@SpringBootApplication
public class TestApplication {
}
