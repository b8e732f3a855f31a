#!/usr/bin/env bash
# Everything the tests need on a fresh Debian/Ubuntu machine, then every test tier:
# apt packages (build, test and benchmark peers), npm dependencies, code-server (cached), the build,
# unit + kernel + editor tests (the kernel tier includes the benchmark suite's quick run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --all
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
bash scripts/install-code-server.sh
# Lint first: the process boundaries of the tree (eslint.config.mjs) fail the run like a test.
npm run --silent lint
node scripts/test.mjs "$@"
