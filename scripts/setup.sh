#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine: install what is missing, build, package the
# extension, install it into VS Code (a local `code` CLI if present, otherwise code-server from
# npm, started on 127.0.0.1), and start demo workloads ready to trace.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }

step "system packages"
bash scripts/install-deps.sh --test

step "npm dependencies"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

step "build"
npm run build --silent

step "package"
npm run package --silent
vsix=$(ls -t ebpf-studio-*.vsix | head -1)

step "install into VS Code"
if command -v code >/dev/null 2>&1; then
  code --install-extension "$vsix" --force
  echo "Installed $vsix into VS Code. Open VS Code and run \"eBPF: Trace Java GC\" from the command palette."
else
  bash scripts/install-code-server.sh
  version=$(sed -n 's/^VERSION=\([0-9.]*\).*/\1/p' scripts/install-code-server.sh)
  cs=${EBPF_STUDIO_CACHE:-$HOME/.cache/ebpf-studio}/code-server-$version/node_modules/.bin/code-server
  data=${EBPF_STUDIO_CACHE:-$HOME/.cache/ebpf-studio}/code-server-data
  port=${EBPF_STUDIO_PORT:-8080}
  mkdir -p "$data"
  "$cs" --extensions-dir "$data/extensions" --install-extension "$vsix" --force >/dev/null
  if ! curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
    nohup "$cs" --auth none --bind-addr "127.0.0.1:$port" --user-data-dir "$data/user" --extensions-dir "$data/extensions" \
      --disable-telemetry --disable-update-check "$PWD" >"$data/code-server.log" 2>&1 &
    echo $! >"$data/code-server.pid"
    sleep 2
  fi
  echo "code-server with eBPF Studio: http://127.0.0.1:$port/  (log: $data/code-server.log)"
  echo "Open it in a browser and run \"eBPF: Trace Java GC\" from the command palette (F1)."
fi

step "demo workloads"
bash scripts/demo.sh
