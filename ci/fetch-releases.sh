#!/usr/bin/env bash
# Fetch the Lua scripts of pinned real BullMQ releases (npm tarballs, PyPI wheels or sdists)
# into DIR/npm-<version>/ and DIR/pypi-<version>/, without installing them; a PyPI fork that
# ships BullMQ's scripts, named pypi:PACKAGE==VERSION, into DIR/pypi-<package>-<version>/; a
# Rust crate's embedded scripts, crates:PACKAGE==VERSION, into DIR/crates-<package>-<version>/.
# Usage: ci/fetch-releases.sh DIR [npm:VERSION|pypi:VERSION|pypi:PACKAGE==VERSION|
#                                  crates:PACKAGE==VERSION ...]
#   With no releases named, fetches the npm and PyPI bullmq releases CI judges: the scripts
#   rows of the bullmq package in ci/releases.toml (ci/releases.py names every row, forks
#   included).
set -euo pipefail
dest="$1"; shift
mkdir -p "$dest"
releases=("$@")
if [ ${#releases[@]} -eq 0 ]; then
  # One spec a line; the assignment fails the script when the list cannot be read.
  listed="$(python "$(dirname "$0")/release_list.py")"
  mapfile -t releases <<<"$listed"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for release in "${releases[@]}"; do
  kind="${release%%:*}"; version="${release#*:}"; package=bullmq; name="$kind-$version"
  if [[ "$version" == *==* ]]; then
    package="${version%%==*}"; version="${version#*==}"; name="$kind-$package-$version"
  fi
  out="$dest/$name"
  [ -d "$out" ] && continue
  mkdir -p "$work/$name" && cd "$work/$name"
  if [ "$kind" = npm ]; then
    npm pack "bullmq@$version" --silent >/dev/null
    tar xzf "bullmq-$version.tgz"
    src=package/dist/cjs/commands
  elif [ "$kind" = crates ]; then
    # cargo downloads the published crate for a scratch package that depends on it; its
    # sources are then in cargo's registry cache, where `cargo metadata` finds them.
    cargo new -q --vcs none scratch
    printf '%s = "=%s"\n' "$package" "$version" >>scratch/Cargo.toml
    root="$(cargo metadata -q --format-version 1 --manifest-path scratch/Cargo.toml |
      python -c 'import json, os, sys; print(next(os.path.dirname(p["manifest_path"]) for p in json.load(sys.stdin)["packages"] if p["name"] == sys.argv[1]))' "$package")"
    mkdir x && cp -r "$root/." x/
    src="$(dirname "$(find x -name 'moveToActive-*.lua' | head -1)")"
  else
    python -m pip download -q --no-deps "$package==$version" -d .
    archive="$(ls | head -1)"
    case "$archive" in
      *.whl) python -m zipfile -e "$archive" x ;;
      *.tar.gz) mkdir x && tar xzf "$archive" -C x ;;
    esac
    src="$(dirname "$(find x -name 'moveToActive-*.lua' | head -1)")"
  fi
  cd - >/dev/null
  mkdir -p "$out" && cp -r "$work/$name/$src/." "$out/"
  echo "$release -> $out ($(ls "$out" | grep -c '\.lua$') scripts)"
done
