#!/usr/bin/env bash
# Builds the documentation site (docs/, mkdocs.yml) in strict mode into target/site, then checks every link and
# anchor in it: MkDocs 1.4 (Debian 12's) fails on a link to a missing page but not on a missing anchor.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v mkdocs >/dev/null 2>&1 || [ ! -d /usr/share/mkdocs/themes/material ]; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq mkdocs mkdocs-material >/dev/null
  else
    echo "docs: mkdocs and mkdocs-material are needed (Debian packages mkdocs, mkdocs-material)" >&2
    exit 1
  fi
fi

mkdocs build --strict --quiet --site-dir target/site
python3 .ci/check-site-links.py target/site docs
