#!/usr/bin/env bash
# Fetch the Lua scripts of pinned real BullMQ releases (npm tarballs, PyPI wheels or sdists)
# into DIR/npm-<version>/ and DIR/pypi-<version>/, without installing them; a PyPI fork that
# ships BullMQ's scripts, named pypi:PACKAGE==VERSION, into DIR/pypi-<package>-<version>/.
# Usage: ci/fetch-releases.sh DIR [npm:VERSION|pypi:VERSION|pypi:PACKAGE==VERSION ...]
#   With no releases named, fetches the npm and PyPI bullmq releases CI judges
#   (ci/releases.py names them all, forks included).
set -euo pipefail
dest="$1"; shift
mkdir -p "$dest"
releases=("$@")
if [ ${#releases[@]} -eq 0 ]; then
  # The releases the acceptance names, and one release on each side of every boundary a
  # vector observes (docs/RESEARCH.md §1.1).
  releases=(npm:4.18.3 npm:5.0.0 npm:5.1.0 npm:5.1.1 npm:5.1.8 npm:5.1.9 npm:5.1.10
            npm:5.5.3 npm:5.5.4 npm:5.8.0 npm:5.8.1 npm:5.8.2 npm:5.8.3 npm:5.8.5 npm:5.8.6
            npm:5.8.7 npm:5.9.0 npm:5.26.2 npm:5.28.0 npm:5.81.5 npm:6.0.0 npm:6.2.1
            npm:6.2.2 npm:6.3.6 npm:6.3.7 npm:6.7.0
            pypi:1.24.0 pypi:2.0.0 pypi:2.8.0 pypi:2.26.0 pypi:3.4.4)
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
