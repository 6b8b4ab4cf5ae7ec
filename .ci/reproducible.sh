#!/usr/bin/env bash
# Reproducible builds: builds the published modules (.ci/published-modules.txt) twice and compares every file they
# publish - main, sources, Javadoc and test jars, and the CycloneDX SBOMs - byte for byte.
#
# The two builds run in two copies of the work tree (the files git tracks or would track, without target/) at
# paths of different lengths, in different time zones and with different umasks, so that a path, a clock or a file
# mode leaking into an artifact shows up as a difference. Tests are skipped: they do not change the artifacts. The
# SBOMs, which ordinary builds skip, are made (-Dcyclonedx.skip=false) and compared too.
# (Maven's JVM runs in UTC whatever TZ says - .mvn/jvm.config - because spring-boot-maven-plugin's repackage of the
# sidecar writes its classes' times shifted by the JVM's time zone otherwise.)
#
# Usage: .ci/reproducible.sh            (KEEP=1 keeps the two copies and their logs; they are kept on failure)
# Prints one line per file, OK or DIFFERS (or MISSING), and exits non-zero if any file is not identical.
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
  echo "reproducible: no modules in .ci/published-modules.txt" >&2
  exit 2
fi
projects=$(printf ':%s,' "${modules[@]}")
projects=${projects%,}

work=$(mktemp -d "${TMPDIR:-/tmp}/outbox-reproducible.XXXXXX")
keep=${KEEP:-0}
cleanup() {
  if [[ "$keep" == 1 ]]; then
    echo "reproducible: kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# A copy of the work tree as git sees it: tracked and untracked-but-not-ignored files that exist (so local edits
# are built too, and no target/ directory comes along).
copy_tree() {
  local dest=$1
  mkdir -p "$dest"
  git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf - | tar -xf - -C "$dest"
}

# $1: the copy; $2: its time zone; $3: its umask.
build() {
  local dir=$1 tz=$2 mask=$3 log=$1.log
  echo "reproducible: building ${#modules[@]} published modules in $dir (TZ=$tz, umask $mask)"
  if ! (cd "$dir" && umask "$mask" && TZ=$tz ./mvnw -B -DskipTests -Dcyclonedx.skip=false package -pl "$projects" -am \
       >"$log" 2>&1); then
    keep=1
    echo "reproducible: the build in $dir failed; the end of its log ($log):" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

# What each published module puts in its target/ for deploying: every jar (main, -sources, -javadoc, -tests) and
# the SBOM. Paths relative to the copy.
published_files() {
  local dir=$1 m d
  for m in "${modules[@]}"; do
    d=$m
    [[ "$m" == outbox-parent ]] && d=.
    (cd "$dir" && find "$d/target" -maxdepth 1 -type f \( -name '*.jar' -o -name '*-cyclonedx.json' \) 2>/dev/null) \
      | sed 's|^\./||'
  done | sort
}

# Which entries of two differing jars differ: a hint for the person reading the log.
explain() {
  local a=$1 b=$2
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - "$a" "$b" <<'PY' || true
import sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])
ea = {i.filename: i for i in a.infolist()}
eb = {i.filename: i for i in b.infolist()}
shown = 0
for name in sorted(set(ea) | set(eb)):
    x, y = ea.get(name), eb.get(name)
    if x is None or y is None:
        why = "only in the " + ("second" if x is None else "first") + " build"
    elif a.read(name) != b.read(name):
        why = "content"
    elif (x.date_time, x.external_attr, x.extra) != (y.date_time, y.external_attr, y.extra):
        why = f"metadata (time {x.date_time} / {y.date_time}, mode {x.external_attr >> 16:o} / {y.external_attr >> 16:o})"
    else:
        continue
    print(f"           {name}: {why}")
    shown += 1
    if shown == 10:
        print("           ...")
        break
if shown == 0 and [i.filename for i in a.infolist()] != [i.filename for i in b.infolist()]:
    print("           the entries are in a different order")
PY
}

one=$work/one/outbox
two=$work/the-second-copy/outbox-again
copy_tree "$one"
copy_tree "$two"
build "$one" UTC 0022
build "$two" Pacific/Chatham 0002

mapfile -t files_one < <(published_files "$one")
mapfile -t files_two < <(published_files "$two")
if (( ${#files_one[@]} == 0 )); then
  echo "reproducible: the builds produced no published files (is .ci/published-modules.txt right?)" >&2
  keep=1
  exit 1
fi

failures=0
while IFS= read -r f; do
  if [[ ! -f "$one/$f" || ! -f "$two/$f" ]]; then
    printf 'MISSING  %s (only the %s build made it)\n' "$f" "$([[ -f "$one/$f" ]] && echo first || echo second)"
    failures=$((failures + 1))
  elif cmp -s "$one/$f" "$two/$f"; then
    printf 'OK       %s\n' "$f"
  else
    printf 'DIFFERS  %s\n' "$f"
    [[ "$f" == *.jar ]] && explain "$one/$f" "$two/$f"
    failures=$((failures + 1))
  fi
done < <(printf '%s\n' "${files_one[@]}" "${files_two[@]}" | sort -u)

total=$(printf '%s\n' "${files_one[@]}" "${files_two[@]}" | sort -u | wc -l)
elapsed=$((SECONDS - started))
if (( failures > 0 )); then
  keep=1
  echo "reproducible: FAILED: $failures of $total published files differ between two builds of the same sources" \
    "(${elapsed}s). Both copies are kept: diff their unpacked jars to see why." >&2
  exit 1
fi
echo "reproducible: all $total published files are byte-identical across two builds (${elapsed}s)"
