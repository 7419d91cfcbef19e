#!/usr/bin/env bash
# Make sure a Docker engine answers. As root on Debian without one: install docker.io and start
# dockerd.
set -euo pipefail

have_engine() { docker info >/dev/null 2>&1; }

if have_engine; then
  echo "docker engine: running ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
  exit 0
fi

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  cat >&2 <<'MSG'
error: no Docker engine answers (`docker info` fails), and this is not root on Debian, so
termcredit cannot install one. Install Docker Engine, start it, make sure your user can reach
it (`docker info` works), then run `make setup` again.
MSG
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "installing docker.io (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

echo "starting dockerd (log: /var/log/termcredit-dockerd.log)"
setsid nohup dockerd >/var/log/termcredit-dockerd.log 2>&1 < /dev/null &
for _ in $(seq 1 60); do
  if have_engine; then echo "docker engine: running"; exit 0; fi
  sleep 1
done
echo "error: dockerd did not answer within 60 s; see /var/log/termcredit-dockerd.log" >&2
tail -n 20 /var/log/termcredit-dockerd.log >&2 || true
exit 1
