#!/usr/bin/env bash
# Installs code-server (a real VS Code served to a browser) from the npm registry for the editor tests
# (test/editor/). @vscode/test-electron needs a VS Code download, which CI cannot reach; code-server
# comes from npm. See ../shared/RECIPES.md, "A real VS Code without internet".
#
# Idempotent: installs into ${EBPF_STUDIO_CACHE:-$HOME/.cache/ebpf-studio}/code-server-<version>, outside
# the repo, and does nothing when that install is already complete and runs.
# Usage: scripts/install-code-server.sh        (exit 0: installed; 1: failed; 3: apt packages missing, not root)
set -euo pipefail

# Keep in sync with CODE_SERVER_VERSION in test/editor/codeServer.ts.
VERSION=4.100.3 # VS Code 1.100; its engines.node is 20, like ours
CACHE=${EBPF_STUDIO_CACHE:-$HOME/.cache/ebpf-studio}
DIR=$CACHE/code-server-$VERSION
BIN=$DIR/node_modules/.bin/code-server
MARKER=$DIR/.install-complete
APT_PACKAGES=(libkrb5-dev libsecret-1-dev libxkbfile-dev libx11-dev ripgrep)

say() { echo "install-code-server: $*"; }
die() { echo "install-code-server: error: $*" >&2; exit "${2:-1}"; }

works() { [[ -f $MARKER && -x $BIN ]] && "$BIN" --version 2>/dev/null | head -1 | grep -qx "$VERSION.*"; }

if works; then
  say "code-server $VERSION already installed at $DIR (nothing to do)"
  exit 0
fi

command -v npm >/dev/null || die "npm not found on PATH; install Node.js 20 first"

# Native modules (kerberos, @vscode/spdlog, native-keymap, node-pty) build from source and need headers.
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-code-server: missing Debian packages: ${missing[*]}" >&2
    echo "install-code-server: run as root, or first: sudo apt-get install -y ${missing[*]}" >&2
    exit 3
  fi
  say "apt-get install -y ${missing[*]}"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; then
    say "apt-get update (package lists look stale)"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  fi
fi
RG=$(command -v rg) || die "ripgrep (rg) not on PATH after installing the ripgrep package"

# @vscode/ripgrep's postinstall downloads rg from GitHub unless its download cache already holds the
# tarball; seed it with Debian's rg so the install works without internet.
TMP=$(node -p 'require("os").tmpdir()')
RG_CACHE=$TMP/vscode-ripgrep-cache-1.15.11
RG_TARBALL=$RG_CACHE/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
if [[ ! -s $RG_TARBALL ]]; then
  say "seeding the ripgrep download cache: $RG_TARBALL (from $RG)"
  mkdir -p "$RG_CACHE"
  stage=$(mktemp -d)
  cp "$RG" "$stage/rg"
  tar -czf "$RG_TARBALL.part" -C "$stage" rg
  mv "$RG_TARBALL.part" "$RG_TARBALL"
  rm -rf "$stage"
fi

# An earlier run that did not finish leaves no marker: start that directory over.
if [[ -d $DIR ]]; then
  say "removing incomplete install at $DIR"
  rm -rf "$DIR"
fi
mkdir -p "$DIR"
echo '{ "name": "ebpf-studio-code-server", "private": true }' >"$DIR/package.json"

# node-gyp (code-server's argon2, node-pty, ...) downloads Node's headers unless it is told where they
# are: root's npm here is configured with nodedir=/usr, a new user's npm is not, and there is no
# internet. Debian's nodejs ships the headers in /usr/include/node.
if [[ -z ${npm_config_nodedir:-} && -f /usr/include/node/node_api.h ]]; then
  export npm_config_nodedir=/usr
fi
say "npm install code-server@$VERSION into $DIR (about 1.5 minutes, 300 MB)"
start=$SECONDS
# npm_config_yes: node-pty's postinstall runs `npx node-gyp`, which otherwise asks before installing.
# --unsafe-perm: as root, npm would otherwise run install scripts as nobody, who cannot write here.
(cd "$DIR" && npm_config_yes=true npm install --unsafe-perm --no-audit --no-fund --loglevel=error \
  "code-server@$VERSION") || die "npm install code-server@$VERSION failed (see the npm output above)"

"$BIN" --version >/dev/null 2>&1 || die "code-server installed but does not run: $BIN --version failed"
touch "$MARKER"
say "installed code-server $("$BIN" --version | head -1) in $((SECONDS - start)) s: $BIN"
