#!/bin/sh
# Builds the container image of `ebpf-studio agent` from Debian packages, with no registry but
# Debian's: mmdebstrap makes a bookworm root file system holding Node.js and the libraries the
# addon links (libdw, libelf, zlib, libstdc++), our dist/ goes to /opt/ebpf-studio/dist, and
# podman (or docker) imports it with the agent as its entry point. Nothing is pulled from a
# container registry, so it builds where only a Debian mirror is reachable.
#
#   scripts/build-agent-image.sh [--tag NAME:TAG] [--engine podman|docker] [--node debian|host] [--out FILE.tar]
#
# --node debian (default) installs bookworm's nodejs package; --node host copies this machine's
# node binary instead (a newer Node.js than the distribution's, e.g. from NodeSource's .deb).
# --out also saves the image as an OCI archive, for `ctr -n k8s.io images import` or
# `docker load` on nodes without a registry.
# Run it as root after `node scripts/build.mjs` (dist/ must hold cli.js and the addon).
# Kubernetes: deploy/kubernetes/ and docs/agent.md, "In a cluster".
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
version=$(node -p "require('$here/package.json').version" 2>/dev/null || echo dev)
tag="localhost/ebpf-studio-agent:$version"
engine=podman
nodesrc=debian
out=
mirror=${EBPF_STUDIO_DEBIAN_MIRROR:-}

while [ $# -gt 0 ]; do
  case "$1" in
    --tag|--engine|--node|--out) [ $# -ge 2 ] || { echo "build-agent-image.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --engine) engine=$2; shift 2 ;;
    --node) nodesrc=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-agent-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

case "$engine" in podman|docker) ;; *) echo "build-agent-image.sh: --engine must be podman or docker, not $engine" >&2; exit 2 ;; esac
case "$nodesrc" in debian|host) ;; *) echo "build-agent-image.sh: --node must be debian or host, not $nodesrc" >&2; exit 2 ;; esac
for cmd in mmdebstrap "$engine"; do
  command -v "$cmd" >/dev/null || { echo "build-agent-image.sh: $cmd is missing: apt-get install mmdebstrap $engine" >&2; exit 2; }
done
for f in cli.js ebpf_studio.node bpf; do
  [ -e "$here/dist/$f" ] || { echo "build-agent-image.sh: $here/dist/$f is missing: run node scripts/build.mjs first" >&2; exit 2; }
done

work=$(mktemp -d /tmp/ebpf-studio-agent-image.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

# What goes in: the built tree only (no node_modules: cli.js is bundled; no webview, no editor code).
app="$work/payload/opt/ebpf-studio"
mkdir -p "$app"
cp -a "$here/dist" "$app/dist"
rm -rf "$app/dist/webview" "$app/dist/extension.js" "$app/dist/extension.js.map"
cp "$here/package.json" "$app/"
if [ -f "$here/LICENSE" ]; then cp "$here/LICENSE" "$app/"; fi
packages=libdw1,libelf1,zlib1g,libstdc++6,ca-certificates
if [ "$nodesrc" = host ]; then
  mkdir -p "$work/payload/usr/bin"
  cp "$(command -v node)" "$work/payload/usr/bin/node"
else
  packages="nodejs,$packages"
fi

start=$(date +%s)
# essential: dpkg's Essential set plus the packages named, no apt; docs, man pages and locales left out.
mmdebstrap --variant=essential --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook="tar -C '$work/payload' -c \$(ls '$work/payload') | tar -C \"\$1\" -x" \
  --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
  bookworm "$work/rootfs.tar" ${mirror:+"$mirror"}

"$engine" import \
  --change 'ENV EBPF_STUDIO_ROOT=/opt/ebpf-studio' \
  --change 'WORKDIR /opt/ebpf-studio' \
  --change 'ENTRYPOINT ["/usr/bin/node", "--no-memory-reducer", "/opt/ebpf-studio/dist/cli.js", "agent"]' \
  --change 'CMD ["--listen", "127.0.0.1:9435"]' \
  --change 'EXPOSE 9435' \
  --change "LABEL org.opencontainers.image.title=ebpf-studio-agent org.opencontainers.image.version=$version" \
  "$work/rootfs.tar" "$tag" >/dev/null
took=$(( $(date +%s) - start ))

if [ -n "$out" ]; then
  if [ "$engine" = podman ]; then podman save --format oci-archive -o "$out" "$tag"; else docker save -o "$out" "$tag"; fi
fi
size=$("$engine" image inspect --format '{{.Size}}' "$tag")
echo "built $tag in ${took} s: $(( size / 1024 / 1024 )) MiB${out:+, saved to $out}"
