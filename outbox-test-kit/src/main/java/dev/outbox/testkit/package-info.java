/**
 * The test kit for adapter authors and applications: the contracts every adapter runs (StoreContract,
 * MessageBrokerContract, …), in-memory fakes (InMemoryStore, InMemoryBroker), fault plans and Await. Fakes
 * are thread-safe; contracts are JUnit 5 test bases.
 */
package dev.outbox.testkit;
