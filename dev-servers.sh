#!/bin/sh
# Runs an embedded PostgreSQL (or MySQL, MariaDB) and Kafka on 127.0.0.1 for developing your own application, from
# this repository: nothing to install but a JDK 17+, no Docker. Prints the spring.datasource.* and
# spring.kafka.bootstrap-servers properties that connect to them; stop it with Ctrl-C. Options go to DevServers:
#   ./dev-servers.sh --database=postgres --name=payments --topics=payments:3 --properties-file=/tmp/dev.properties
# and the application imports that file: spring.config.import=optional:file:/tmp/dev.properties
set -eu
cd "$(dirname "$0")"
root=$(pwd)

# Build only the servers module (tests skipped), without installing anything.
./mvnw -q -B -pl outbox-test-servers -am -DskipTests -Dmaven.source.skip=true -Dmaven.javadoc.skip=true package

# Quiet servers: the properties are what this prints; warnings and errors still show.
exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" -Doutbox.test.servers.dir="$root/outbox-test-servers/target/dev-servers" \
  -Dorg.slf4j.simpleLogger.log.io.zonky.test=warn -Dorg.slf4j.simpleLogger.log.kafka=warn \
  -Dorg.slf4j.simpleLogger.log.org.apache.kafka=warn -Dorg.slf4j.simpleLogger.log.state.change.logger=warn \
  -cp "$root/outbox-test-servers/target/classes:$(cat "$root/outbox-test-servers/target/dev-servers.classpath")" \
  dev.outbox.testservers.DevServers "$@"
