#!/usr/bin/env bash
# Proof that the published artifacts stand alone, as a user gets them from Maven Central:
#  (a) deploys the whole reactor (tests skipped, nothing installed) to a staging directory, and checks that exactly
#      the modules of .ci/published-modules.txt were deployed - each with its POM and SBOM, and a jar module with
#      its sources and Javadoc jars - and that outbox-bom lists exactly them;
#  (b) builds and runs two consumer projects kept in .ci/consumers (not part of the reactor) with a new, empty local
#      repository and a settings.xml whose only repositories are the staging directory and Maven Central: a missing
#      module, an unpublished parent, or a published module depending on an unpublished one (or on a test-scoped
#      artifact) fails the resolution or the run;
#  (c) runs the new user's path (.ci/new-user-path.sh): a Spring Boot project written from the README's and the
#      Spring page's snippets, built the same way, run on ./dev-servers.sh's servers, must publish an order's event;
#  (d) prints what it did.
# An empty local repository means the consumers download their dependencies and plugins from Central each time.
#
# Usage: .ci/staging-check.sh            (KEEP=1 keeps the staging directory, the repository and the logs; they are
#                                          kept on failure)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
started=$SECONDS

modules=()
while read -r m _; do
  [[ -z "$m" || "$m" == \#* ]] && continue
  modules+=("$m")
done < .ci/published-modules.txt
if (( ${#modules[@]} == 0 )); then
  echo "staging-check: no modules in .ci/published-modules.txt" >&2
  exit 2
fi
# The Boot the starter is built against: the consumer must use the same.
spring_boot_version=$(sed -n 's:.*<spring-boot.version>\([^<]*\)</spring-boot.version>.*:\1:p' pom.xml | head -n 1)
if [[ -z "$spring_boot_version" ]]; then
  echo "staging-check: no <spring-boot.version> in the root pom.xml" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/outbox-staging.XXXXXX")
staging=$work/staging
repo=$work/local-repository
settings=$work/settings.xml
keep=${KEEP:-0}
cleanup() {
  if [[ "$keep" == 1 ]]; then
    echo "staging-check: kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

fail() {
  keep=1
  echo "staging-check: FAILED: $*" >&2
  exit 1
}
# $1: the log of the command that failed.
fail_with_log() {
  local log=$1
  shift
  keep=1
  echo "staging-check: FAILED: $*; from $log:" >&2
  if grep -q '^\[ERROR\]' "$log"; then
    grep '^\[ERROR\]' "$log" | awk '!seen[$0]++' | head -n 20 >&2   # Maven prints its errors twice
  else
    tail -n 30 "$log" >&2
  fi
  exit 1
}
java_cmd=java
[[ -n "${JAVA_HOME:-}" ]] && java_cmd=$JAVA_HOME/bin/java

# (a) Deploy. The whole reactor, so that an unpublished module which lost its maven.deploy.skip shows up below; with
# the SBOMs, which ordinary builds skip.
echo "staging-check: deploying the reactor to $staging (tests skipped, nothing installed)"
t=$SECONDS
./mvnw -B -DskipTests -Dcyclonedx.skip=false -Dmaven.install.skip=true deploy \
  -DaltDeploymentRepository="staging::file://$staging" \
  >"$work/deploy.log" 2>&1 || fail_with_log "$work/deploy.log" "the deploy to the staging directory failed"
deploy_seconds=$((SECONDS - t))

[[ -d "$staging/dev/outbox" ]] || fail "nothing was deployed under dev/outbox in $staging"
others=$(cd "$staging" && find . -mindepth 2 -maxdepth 2 -type d ! -path ./dev/outbox | sed 's|^\./||')
[[ -z "$others" ]] || fail "the deploy put artifacts outside dev.outbox: $others"
versions=$(ls "$staging/dev/outbox/outbox-parent" 2>/dev/null | grep -v '^maven-metadata' || true)
[[ $(wc -w <<<"$versions") == 1 ]] || fail "expected one version of outbox-parent in the staging directory, found: ${versions:-none}"
version=$versions

mapfile -t deployed < <(ls "$staging/dev/outbox" | sort)
mapfile -t expected < <(printf '%s\n' "${modules[@]}" | sort)
unexpected=$(comm -13 <(printf '%s\n' "${expected[@]}") <(printf '%s\n' "${deployed[@]}"))
missing=$(comm -23 <(printf '%s\n' "${expected[@]}") <(printf '%s\n' "${deployed[@]}"))
[[ -z "$unexpected" ]] || fail "deployed but not in .ci/published-modules.txt (an unpublished module without maven.deploy.skip?): $(echo $unexpected)"
[[ -z "$missing" ]] || fail "in .ci/published-modules.txt but not deployed (maven.deploy.skip set?): $(echo $missing)"

echo "staging-check: deployed $version of ${#deployed[@]} modules:"
for m in "${modules[@]}"; do
  dir=$staging/dev/outbox/$m/$version
  src=$m
  [[ "$m" == outbox-parent ]] && src=.
  need=(pom sbom)
  grep -q '<packaging>pom</packaging>' "$src/pom.xml" || need+=(jar sources javadoc)
  for kind in "${need[@]}"; do
    case $kind in
      pom) hit=$(find "$dir" -maxdepth 1 -name "$m-*.pom") ;;
      sbom) hit=$(find "$dir" -maxdepth 1 -name "$m-*-cyclonedx.json") ;;
      jar) hit=$(find "$dir" -maxdepth 1 -name "$m-*.jar" ! -name '*-sources.jar' ! -name '*-javadoc.jar' \
             ! -name '*-tests.jar') ;;
      *) hit=$(find "$dir" -maxdepth 1 -name "$m-*-$kind.jar") ;;
    esac
    [[ -n "$hit" ]] || fail "$m $version was deployed without its $kind (in $dir)"
  done
  printf '  %-28s %s\n' "$m" "${need[*]}"
done

# The BOM must list exactly the published modules (besides the parent and itself).
bom_pom=$(find "$staging/dev/outbox/outbox-bom/$version" -maxdepth 1 -name 'outbox-bom-*.pom' | head -n 1)
listed=$(sed -n '/<dependencyManagement>/,/<\/dependencyManagement>/p' "$bom_pom" \
  | sed -n 's:.*<artifactId>\([^<]*\)</artifactId>.*:\1:p' | sort -u)
should=$(printf '%s\n' "${modules[@]}" | grep -v -x -e outbox-parent -e outbox-bom | sort)
[[ "$listed" == "$should" ]] || fail "outbox-bom does not list exactly the published modules:
  listed but not published: $(comm -23 <(echo "$listed") <(echo "$should") | tr '\n' ' ')
  published but not listed: $(comm -13 <(echo "$listed") <(echo "$should") | tr '\n' ' ')"
echo "staging-check: outbox-bom lists exactly the $(wc -l <<<"$listed") published library modules"

# (b) The consumers. Repositories: the staging directory and Central (the super POM's "central"); any other
# repository a POM declares is blocked, so that nothing resolves from anywhere else.
cat >"$settings" <<EOF
<settings>
  <mirrors>
    <mirror>
      <id>only-staging-and-central</id>
      <mirrorOf>*,!staging,!central</mirrorOf>
      <url>file:///dev/null</url>
      <blocked>true</blocked>
    </mirror>
  </mirrors>
  <profiles>
    <profile>
      <id>outbox-staging</id>
      <repositories>
        <repository>
          <id>staging</id>
          <url>file://$staging</url>
          <releases><enabled>true</enabled></releases>
          <snapshots><enabled>true</enabled><updatePolicy>always</updatePolicy></snapshots>
        </repository>
      </repositories>
    </profile>
  </profiles>
  <activeProfiles>
    <activeProfile>outbox-staging</activeProfile>
  </activeProfiles>
</settings>
EOF
mkdir -p "$repo"

# $1: the consumer (a directory of .ci/consumers); $2: its main class; the rest: Maven properties it needs.
consumer_seconds=()
run_consumer() {
  local name=$1 main=$2
  shift 2
  local dir=$work/consumers/$name log=$work/$name.log t=$SECONDS
  mkdir -p "$work/consumers"
  cp -R ".ci/consumers/$name" "$dir"   # built outside the work tree: no target/ left behind, nothing stale
  echo "staging-check: building the $name consumer (.ci/consumers/$name) against the staging directory and Central"
  ./mvnw -B -s "$settings" -Dmaven.repo.local="$repo" -f "$dir/pom.xml" -Doutbox.version="$version" "$@" \
    compile dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$dir/classpath.txt" \
    >"$log" 2>&1 || fail_with_log "$log" "the $name consumer does not build from the published artifacts"
  echo "staging-check: running $main"
  "$java_cmd" -cp "$dir/target/classes:$(cat "$dir/classpath.txt")" "$main" 2>&1 | sed 's/^/    /' \
    || fail "the $name consumer's main ($main) failed: see above"
  consumer_seconds+=("$name $((SECONDS - t))s")
}

run_consumer plain-java dev.outbox.ci.plain.PlainJavaConsumer
run_consumer spring-boot dev.outbox.ci.spring.SpringBootConsumer -Dspring-boot.version="$spring_boot_version"

# (c) The new user's path, on the same staging repository and local repository.
t=$SECONDS
bash .ci/new-user-path.sh "$settings" "$repo" "$version" "$spring_boot_version" "$work" \
  || fail "the new user's path (.ci/new-user-path.sh) failed: see above"
consumer_seconds+=("new-user-path $((SECONDS - t))s")

echo "staging-check: OK: ${#modules[@]} published modules of $version stand alone (deploy ${deploy_seconds}s," \
  "consumers ${consumer_seconds[*]}, $((SECONDS - started))s in all)"
