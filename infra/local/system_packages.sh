#!/usr/bin/env bash
# Debian packages the tests need, installed only when missing (apt-get update at most once per run).
# Usage: infra/local/system_packages.sh COMMAND=PACKAGE ...  e.g. chromium=chromium chromedriver=chromium-driver
set -euo pipefail
missing=()
for pair in "$@"; do
  command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing ${missing[*]}: install them with your package manager" >&2
  exit 1
fi
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
echo "installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
