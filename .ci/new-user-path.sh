#!/usr/bin/env bash
# The new user's path (#35), as a test: a new Spring Boot project written from the documentation's own snippets
# (.ci/new-user/generate.py: the Spring page's dependencies and application.yml, the README's Orders#place), built
# against the published artifacts in a staging repository and Maven Central only, run on the servers of the
# documented dev-servers path (./dev-servers.sh, docs/getting-started.md#servers-for-your-own-application) with the
# properties file it writes imported as documented; it places an order and checks that the order's event arrives in
# Kafka (NewUserPathCheck). Fails naming the step.
#
# Run by .ci/staging-check.sh after its consumers, on its staging repository:
#   .ci/new-user-path.sh <settings.xml> <local repository> <outbox version> <spring boot version> <work directory>
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
settings=$1 repo=$2 version=$3 boot=$4 work=$5
project=$work/new-user
props=$work/new-user-dev.properties
log=$work/new-user-build.log
servers_log=$work/new-user-dev-servers.log
java_cmd=java
[[ -n "${JAVA_HOME:-}" ]] && java_cmd=$JAVA_HOME/bin/java
started=$SECONDS

fail() {
  echo "new-user-path: FAILED: $*" >&2
  exit 1
}

rm -rf "$project" "$props"
python3 .ci/new-user/generate.py "$root" "$project" "$boot" || fail "the project could not be written from the docs"
grep -q "<version>$version</version>" "$project/pom.xml" \
  || fail "the Spring page's dependencies snippet does not name the version built, $version (stale docs?)"

# The servers, as docs/getting-started.md starts them: the database named as the snippet's URL, the topic it writes.
echo "new-user-path: starting ./dev-servers.sh (log: $servers_log)"
./dev-servers.sh --name=orders --topics=order-events:3 --properties-file="$props" >"$servers_log" 2>&1 &
servers=$!
stop_servers() {
  if kill -0 "$servers" 2>/dev/null; then
    kill "$servers" 2>/dev/null || true
    wait "$servers" 2>/dev/null || true
  fi
}
trap stop_servers EXIT

# Build the project meanwhile: the staging repository and Central only.
echo "new-user-path: building the generated project ($project) against the staging repository and Central"
t=$SECONDS
./mvnw -B -s "$settings" -Dmaven.repo.local="$repo" -f "$project/pom.xml" compile dependency:build-classpath \
  -Dmdep.includeScope=runtime -Dmdep.outputFile="$project/classpath.txt" >"$log" 2>&1 \
  || { grep '^\[ERROR\]' "$log" | awk '!seen[$0]++' | head -n 20 >&2; fail "the generated project does not build (log: $log)"; }
build_seconds=$((SECONDS - t))

# The servers' properties file appears once both servers are up (at most 5 minutes: the first run builds them).
for _ in $(seq 1 600); do
  [[ -s "$props" ]] && break
  kill -0 "$servers" 2>/dev/null || { tail -n 30 "$servers_log" >&2; fail "./dev-servers.sh ended before it wrote $props"; }
  sleep 0.5
done
[[ -s "$props" ]] || { tail -n 30 "$servers_log" >&2; fail "./dev-servers.sh wrote no $props within 5 minutes"; }
echo "new-user-path: servers up:"
sed 's/^/    /' "$props"

echo "new-user-path: running the application with spring.config.import=optional:file:$props"
app_log=$work/new-user-app.log
if ! "$java_cmd" -cp "$project/target/classes:$(cat "$project/classpath.txt")" com.example.orders.NewUserPathCheck \
    "--spring.config.import=optional:file:$props" >"$app_log" 2>&1; then
  tail -n 60 "$app_log" >&2
  fail "the application built from the docs did not publish its order's event (its log: $app_log)"
fi
grep '^new-user-path:' "$app_log" | sed 's/^/    /'
echo "new-user-path: OK (project built in ${build_seconds}s, $((SECONDS - started))s in all)"
