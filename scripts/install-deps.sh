#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages eBPF Studio needs. As root it runs apt-get; otherwise it
# prints the apt-get line and exits 1. Groups: build (always), test (peers, JDK, browser,
# code-server build deps), bench (peer tools for the benchmark suite).
# Usage: scripts/install-deps.sh [--test] [--bench] [--all]
set -euo pipefail

build=(clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev make g++ python3 binutils gcc)
test=(openjdk-17-jdk-headless libbpf-tools bpftrace clangd chromium ripgrep libkrb5-dev libsecret-1-dev libxkbfile-dev libx11-dev procps curl linux-perf libunwind8 sudo)
# gdb: heaptrack -p attaches through it (the peer of memleak --pid --mode inject)
bench=(heaptrack gdb)
# memleak --mode inject is tested on a program linking jemalloc
test+=(libjemalloc-dev)
# go tool pprof reads our pprof exports in the kernel tier
test+=(golang-go)
# the fleet agent's kernel test scrapes it with Debian's Prometheus and checks it with promtool
test+=(prometheus)
# tracers on programs in real containers (test/kernel/containers.test.ts): podman with runc (crun
# refuses hybrid cgroups), and mmdebstrap to build the image with its own JDK from Debian's packages
test+=(podman runc mmdebstrap)
# the same under docker (test/kernel/agentContainer.test.ts): Debian's docker.io (with containerd,
# tini, iptables). Nothing needs it running: without systemd the test starts a dockerd of its own
# (no bridge, no iptables rules) and stops it; on a fresh machine this adds ~15 s here and ~50 s
# to that test (dockerd, and the two test images loaded into docker's store from podman's)
test+=(docker.io)
# rootless podman as a user the test makes (test/kernel/containerdRootless.test.ts): newuidmap and
# newgidmap map the user's subordinate ids. ~5 s to install here; the test adds ~30 s importing the
# image into that user's store. (Its containerd half uses docker.io's containerd and ctr: ~40 s.)
test+=(uidmap)

want=("${build[@]}")
for a in "$@"; do
  case "$a" in
    --test) want+=("${test[@]}") ;;
    --bench) want+=("${bench[@]}") ;;
    --all) want+=("${test[@]}" "${bench[@]}") ;;
    *) echo "install-deps: unknown option $a (use --test, --bench, --all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "Install them with:  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install-deps: apt-get not found: install these packages with your distribution's tools: ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Optional peers may be missing on other releases: install what exists, fail only on build tools.
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/ebpf-studio-apt.log 2>&1; then
  for p in "${missing[@]}"; do
    apt-get install -y -qq --no-install-recommends "$p" >>/tmp/ebpf-studio-apt.log 2>&1 || echo "install-deps: could not install $p" >&2
  done
  for p in "${build[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || { echo "install-deps: required package $p failed to install (see /tmp/ebpf-studio-apt.log)" >&2; exit 1; }
  done
fi
echo "install-deps: done"
