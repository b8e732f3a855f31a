#!/usr/bin/env node
// Runs the test tiers with node's test runner (TypeScript through tsx).
// Usage: node scripts/test.mjs [unit|kernel|editor ...] [--no-build]   (default: all three, in that order)
// Kernel tests skip with the reason where BPF is not permitted; editor tests need code-server
// (scripts/install-code-server.sh).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tiers = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const noBuild = process.argv.includes('--no-build');
const chosen = tiers.length ? tiers : ['unit', 'kernel', 'editor'];

function findTests(dir) {
  if (!fs.existsSync(dir)) return [];
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...findTests(p));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

// Tests run against the build outputs (dist/): bring them up to date first (incremental).
if (!noBuild) {
  const b = spawnSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
  if (b.status !== 0) process.exit(b.status ?? 1);
}

const files = chosen.flatMap((t) => findTests(path.join(root, 'test', t)));
if (files.length === 0) {
  console.error(`no test files in ${chosen.join(', ')}`);
  process.exit(1);
}
// Tests lose data on purpose (full maps, a frozen reader): their loss history goes to a folder of
// this run, never into the one `doctor` reads for the user.
const state = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-test-state-'));
// Under `sudo bash scripts/test-all.sh` the helper and the CLI would work for $SUDO_USER (they run
// launched programs as that user and refuse a helper in a user-owned checkout): the tests run as
// root and simulate other users explicitly (test/kernel/identity.test.ts), so sudo's ids are dropped.
const env = { ...process.env, EBPF_STUDIO_ROOT: root, EBPF_STUDIO_STATE_DIR: state };
for (const k of ['SUDO_UID', 'SUDO_GID', 'SUDO_USER', 'SUDO_COMMAND', 'PKEXEC_UID']) delete env[k];
// Kernel and editor tests share the machine's CPUs and BPF state: run files one at a time.
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files], {
  cwd: root,
  stdio: 'inherit',
  env,
});
fs.rmSync(state, { recursive: true, force: true });
process.exit(r.status ?? 1);
