package dev.outbox.spring.modulith.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A Spring Modulith application of one module, {@code orders}, whose {@code OrderPlaced} event is externalized. */
@SpringBootApplication
public class ModulithTestApplication {
}
