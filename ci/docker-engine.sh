# Sourced by .ci/run: a private Docker engine and a local Redis image, for the docker tests.
#
#   source ci/docker-engine.sh
#   trap docker_engine_stop EXIT
#
# Exports DOCKER_HOST, TESTCONTAINERS_RYUK_DISABLED and BULLMQ_CONFORMANCE_IMAGE; defines
# docker_engine_stop. No image registry is reachable in CI, so the image is built from the
# Debian redis-server binary that .ci/run installs.

DOCKER_ENGINE_IMAGE=bullmq-conformance/redis:7.0.15

_docker_engine_install() {
  command -v dockerd >/dev/null && return 0
  # Without a policy-rc.d, the package's postinst would start the stock daemon, which adds a
  # bridge and iptables rules to the host: forbid service starts for the install only.
  local policy=/usr/sbin/policy-rc.d made_policy="" rc=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
  fi
  apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io ||
    rc=$?
  [ -z "$made_policy" ] || rm -f "$policy"
  return "$rc"
}

_docker_engine_start() {
  # A short path under /tmp: the socket path must stay under the 108-byte limit.
  DOCKER_ENGINE_DIR=$(mktemp -d /tmp/bmqc-docker.XXXXXX) || return 1
  # No bridge, no iptables, no forwarding: the host network is left as it is, and
  # containers use host networking.
  dockerd --iptables=false --ip-forward=false --bridge=none \
    --data-root "$DOCKER_ENGINE_DIR/data" --exec-root "$DOCKER_ENGINE_DIR/exec" \
    --pidfile "$DOCKER_ENGINE_DIR/dockerd.pid" -H "unix://$DOCKER_ENGINE_DIR/docker.sock" \
    </dev/null >"$DOCKER_ENGINE_DIR/dockerd.log" 2>&1 &
  DOCKER_ENGINE_PID=$!
  export DOCKER_HOST="unix://$DOCKER_ENGINE_DIR/docker.sock"
  local deadline=$((SECONDS + 20))
  until docker info >/dev/null 2>&1; do
    if ! kill -0 "$DOCKER_ENGINE_PID" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      if kill -0 "$DOCKER_ENGINE_PID" 2>/dev/null; then
        echo "docker-engine: dockerd did not answer within 20 s; its log ends with:" >&2
      else
        echo "docker-engine: dockerd exited; its log ends with:" >&2
      fi
      tail -n 30 "$DOCKER_ENGINE_DIR/dockerd.log" >&2
      return 1
    fi
    sleep 0.1
  done
}

_docker_engine_image() {
  docker image inspect "$DOCKER_ENGINE_IMAGE" >/dev/null 2>&1 && return 0
  # /usr/bin/redis-server links to redis-check-rdb, which runs as a server when its argv[0]
  # is redis-server: copy the real file under that name, with the libraries it loads.
  local bin root libs rc=0
  bin=$(readlink -f /usr/bin/redis-server)
  if [ ! -x "$bin" ] || ! libs=$(ldd "$bin"); then
    echo "docker-engine: /usr/bin/redis-server is missing or does not load" >&2
    return 1
  fi
  root=$(mktemp -d) || return 1
  (
    mkdir -p "$root/usr/bin" "$root/data" "$root/tmp" "$root/etc" &&
      cp -L "$bin" "$root/usr/bin/redis-server" &&
      grep -o '/[^ ]*' <<<"$libs" | while read -r lib; do
        mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib" || exit 1
      done &&
      echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd" &&
      echo 'root:x:0:' >"$root/etc/group" &&
      chmod 1777 "$root/tmp" &&
      tar -C "$root" -c . | docker import \
        --change 'CMD ["/usr/bin/redis-server","--save","","--appendonly","no","--dir","/data"]' \
        - "$DOCKER_ENGINE_IMAGE" >/dev/null
  ) || rc=$?
  rm -rf "$root"
  [ "$rc" -eq 0 ] || echo "docker-engine: could not build $DOCKER_ENGINE_IMAGE" >&2
  return "$rc"
}

# Stop the dockerd started above by its PID (never by name), then remove its directory.
docker_engine_stop() {
  local dir=${DOCKER_ENGINE_DIR:-} pid="" waited=0
  [ -n "$dir" ] || return 0
  if [ -s "$dir/dockerd.pid" ]; then
    pid=$(cat "$dir/dockerd.pid")
  else
    pid=${DOCKER_ENGINE_PID:-}  # dockerd died or never wrote its pidfile
  fi
  # Check the name too, so that a PID reused by another process is left alone.
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "docker-engine: dockerd $pid ignored SIGTERM for 10 s; killing it" >&2
      kill -9 "$pid" 2>/dev/null || true
      sleep 0.5
    fi
  fi
  # dockerd leaves a bind mount of the host's network namespace under exec/netns: unmount what
  # is left under the directory (deepest first) so that it can be removed.
  local mounts mount
  mounts=$(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  for mount in $mounts; do
    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
  done
  rm -rf "$dir" 2>/dev/null || echo "docker-engine: could not remove all of $dir" >&2
  unset DOCKER_ENGINE_DIR DOCKER_ENGINE_PID DOCKER_HOST
}

# The calls sit in || lists, where set -e does not reach: each function checks its own steps.
# A failure after dockerd started stops it here, since the caller's trap may not be set yet.
# Sourcing twice reuses the engine that already answers.
if [ -z "${DOCKER_ENGINE_DIR:-}" ] || ! docker info >/dev/null 2>&1; then
  _docker_engine_install || return 1
  _docker_engine_start || { docker_engine_stop; return 1; }
fi
_docker_engine_image || { docker_engine_stop; return 1; }
export TESTCONTAINERS_RYUK_DISABLED=true
export BULLMQ_CONFORMANCE_IMAGE=$DOCKER_ENGINE_IMAGE
