#!/usr/bin/env bash
# Installs Valkey 8 from Debian bookworm-backports when valkey-server is missing.
# A private sources list and state directory are used, so /etc/apt is left as it is. The
# archive is the machine's own Debian mirror, read from its apt sources (deb822 `URIs:` lines,
# or one-line `deb` entries), so CI uses whatever mirror the machine is set up with.
# Usage: ci/valkey.sh                  install when missing
#        ci/valkey.sh --print-sources  print the sources list it would use, and exit
#   BMQC_APT_ETC names the apt configuration directory to read (default /etc/apt).
set -euo pipefail
apt_etc="${BMQC_APT_ETC:-/etc/apt}"

# Every archive URI of the apt sources, in the order apt reads them.
apt_uris() {
  shopt -s nullglob
  local sources=("$apt_etc"/sources.list.d/*.sources) file
  if [ ${#sources[@]} -gt 0 ]; then
    awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "${sources[@]}"
  fi
  for file in "$apt_etc/sources.list" "$apt_etc"/sources.list.d/*.list; do
    if [ -f "$file" ]; then  # `deb [options] URI suite components`: the URI, options dropped
      sed -E -n 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
        "$file"
    fi
  done
}

# The sources list for bookworm and its backports, from the first Debian archive found (and
# the security archive, when the machine has one); one line and exit 1 when there is none.
sources_list() {
  local uris mirror security
  uris="$(apt_uris)"
  mirror="$(grep -m 1 -E '/debian/?$' <<<"$uris" || true)"
  security="$(grep -m 1 -E '/debian-security/?$' <<<"$uris" || true)"
  if [ -z "$mirror" ]; then
    echo "ci/valkey.sh: no Debian archive (a URI ending in /debian) in the apt sources under" \
      "$apt_etc (sources.list.d/*.sources URIs:, sources.list and sources.list.d/*.list deb" \
      "lines); cannot install Valkey from bookworm-backports" >&2
    return 1
  fi
  mirror="${mirror%/}"
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror"
  if [ -n "$security" ]; then
    printf 'deb %s bookworm-security main\n' "${security%/}"
  fi
  printf 'deb %s bookworm-backports main\n' "$mirror"
}

if [ "${1:-}" = --print-sources ]; then
  sources_list
  exit 0
fi
if command -v valkey-server >/dev/null 2>&1; then
  valkey-server --version
  exit 0
fi
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/lists/partial"
sources_list > "$d/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$d/lists")
apt-get "${apt_opts[@]}" update -qq
DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq \
  --no-install-recommends -t bookworm-backports valkey-server
valkey-server --version
