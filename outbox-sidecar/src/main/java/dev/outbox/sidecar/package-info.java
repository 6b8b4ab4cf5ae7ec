/**
 * The outbox sidecar: a standalone harvester, {@code java -jar outbox-sidecar.jar --config outbox.yaml}, publishing
 * one or more outboxes from PostgreSQL or MySQL/MariaDB to Kafka, with Actuator health and Prometheus, and an operator
 * API and console for parked records. A Spring Boot application on top of {@code outbox-spring-boot-starter}; see
 * {@link dev.outbox.sidecar.SidecarApplication} and the README's "Sidecar" section.
 */
package dev.outbox.sidecar;
