#!/usr/bin/env bash
# System tools termcredit uses besides Docker: debootstrap (builds the base image when no
# registry is reachable), graphviz (draws dependency graphs) and bpftrace (the eBPF tracer
# backend, which runs on the host: without it the tracer is strace). Installed with apt as root on
# Debian; elsewhere, a note says what is missing (both are optional for most commands).
set -euo pipefail
missing=()
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
command -v bpftrace >/dev/null 2>&1 || missing+=(bpftrace)
[ ${#missing[@]} -eq 0 ] && { echo "system tools: present (debootstrap, graphviz, bpftrace)"; exit 0; }
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "note: missing ${missing[*]}; install them for offline base images, graph pictures and the eBPF tracer" >&2
fi
