#!/usr/bin/env bash
# Prints the path of a position-independent libbpf.a matching the installed libbpf-dev, building
# it once from Debian's source package into a cache. Debian's own libbpf.a is built without
# -fPIC and cannot be linked into a shared object such as our .node addon; this lets the addon
# carry libbpf inside it (no runtime dependency on libbpf.so.1, which Ubuntu 22.04 lacks).
# Exit 1 (with the reason on stderr) when it cannot: the build then links libbpf.so dynamically.
set -euo pipefail

version=$(dpkg-query -W -f='${Version}' libbpf-dev 2>/dev/null) || { echo "build-libbpf: libbpf-dev is not installed" >&2; exit 1; }
upstream=${version#*:}
upstream=${upstream%%-*}
cache=${EBPF_STUDIO_CACHE:-$HOME/.cache/ebpf-studio}/libbpf-pic-${version//:/_}
if [ -f "$cache/libbpf.a" ]; then
  echo "$cache/libbpf.a"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. /etc/os-release
codename=${VERSION_CODENAME:-bookworm}
# The first mirror the machine already uses (one-line or deb822 format), not a commented one.
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  sed -n -E 's/^(deb|URIs:)[[:space:]]+(\[[^]]*\][[:space:]]+)?(https?:\/\/[^ ]+).*/\3/p' | grep -E '/(debian|ubuntu)/?$' | head -1 || true)
if [ -z "$mirror" ]; then
  if [ "${ID:-debian}" = ubuntu ]; then mirror=http://archive.ubuntu.com/ubuntu; else mirror=http://deb.debian.org/debian; fi
fi
mkdir -p "$work/lists/partial"
echo "deb-src $mirror $codename main" >"$work/src.list"
echo "deb-src $mirror $codename-updates main" >>"$work/src.list"
opts=(-o "Dir::Etc::SourceList=$work/src.list" -o "Dir::Etc::SourceParts=/dev/null" -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
{
  apt-get "${opts[@]}" update -qq &&
    (cd "$work" && apt-get "${opts[@]}" source --download-only -qq "libbpf=${version#*:}")
} >"$work/apt.log" 2>&1 || { echo "build-libbpf: could not fetch the libbpf $version source package: $(tail -3 "$work/apt.log")" >&2; exit 1; }
orig=$(ls "$work"/libbpf_"$upstream".orig.tar.* 2>/dev/null | head -1)
[ -n "$orig" ] || { echo "build-libbpf: no upstream tarball in the source package" >&2; exit 1; }
tar -xf "$orig" -C "$work"
src=$(find "$work" -maxdepth 2 -type d -name src -path "*libbpf*" | head -1)
mkdir -p "$work/obj"
make -s -C "$src" BUILD_STATIC_ONLY=1 OBJDIR="$work/obj" EXTRA_CFLAGS="-fPIC -O2" -j"$(nproc)" >"$work/make.log" 2>&1 ||
  { echo "build-libbpf: make failed: $(tail -5 "$work/make.log")" >&2; exit 1; }
mkdir -p "$cache"
cp "$work/obj/libbpf.a" "$cache/libbpf.a"
echo "$cache/libbpf.a"
