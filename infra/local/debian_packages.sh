#!/usr/bin/env bash
# Debian packages the tests need, listed in debian-packages.txt beside this script; installs only
# the missing ones (one `apt-get update` first), so a warm machine spends nothing here.
set -euo pipefail
list="$(dirname "$0")/debian-packages.txt"
missing=()
while read -r pkg _; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done <"$list"
[[ ${#missing[@]} -eq 0 ]] && exit 0
if ! command -v apt-get >/dev/null; then
    echo "missing Debian packages (install them by hand): ${missing[*]}" >&2
    exit 0
fi
sudo=""
[[ "$(id -u)" -eq 0 ]] || sudo="sudo"
echo "installing Debian packages: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
