/**
 * Runnable examples: the orders demo and the webhook broker of the guide. Not published; read them, copy what
 * you need.
 */
package dev.outbox.examples;
