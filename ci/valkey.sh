#!/usr/bin/env bash
# Installs Valkey 8 from Debian bookworm-backports when valkey-server is missing.
# A private sources list and state directory are used, so /etc/apt is left as it is.
set -euo pipefail
if command -v valkey-server >/dev/null 2>&1; then
  valkey-server --version
  exit 0
fi
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/lists/partial"
cat > "$d/sources.list" <<'LIST'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
deb http://deb.debian.org/debian bookworm-backports main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$d/lists")
apt-get "${apt_opts[@]}" update -qq
DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq \
  --no-install-recommends -t bookworm-backports valkey-server
valkey-server --version
