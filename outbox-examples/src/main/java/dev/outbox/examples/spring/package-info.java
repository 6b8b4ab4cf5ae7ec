/**
 * The Spring Boot example application of the guide. Not published.
 */
package dev.outbox.examples.spring;
