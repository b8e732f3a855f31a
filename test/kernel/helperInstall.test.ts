// The root-owned install: the generated script (what "eBPF: Install Privileged Helper" and
// `ebpf-studio install-helper` run as root) copies every file root-owned with fixed modes,
// refuses files that changed after they were hashed, and the installed launcher starts a helper
// that passes its own root-owned check and knows whom it works for (PKEXEC_UID).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import { chooseNode, installPlan, POLKIT_ACTION } from '../../extension/privilege/installPlan';
import { untrustedReason } from '../../extension/privilege/trustedPath';
import { distDir, kernelSkipReason, runCli } from '../helpers';

const skip = kernelSkipReason();
const node = () => chooseNode(['/usr/bin/node', '/usr/local/bin/node'], process.execPath, false, (f) => untrustedReason(f) === undefined);

function tmpRoot(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-install-'));
  fs.chmodSync(d, 0o755);
  return d;
}

test('the install script copies the helper root-owned, 0755 folders and 0644/0755 files, with our polkit action', { timeout: 60000 }, async (t) => {
  if (process.geteuid?.() !== 0) return t.skip('needs root to install');
  const base = tmpRoot();
  try {
    const root = path.join(base, 'lib');
    const policy = path.join(base, 'actions', `${POLKIT_ACTION}.policy`);
    const plan = installPlan(distDir, '9.9.9-test', node(), { root, policy });
    const r = spawnSync('/bin/sh', ['-c', plan.script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr + r.stdout);
    for (const f of plan.files) {
      const st = fs.statSync(path.join(plan.dir, f.to));
      assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [0, 0, f.mode], f.to);
    }
    for (const d of [root, plan.dir, path.join(plan.dir, 'bpf')]) assert.equal(fs.statSync(d).mode & 0o7777, 0o755, d);
    assert.ok(plan.files.some((f) => f.to === 'helper.js') && plan.files.some((f) => f.to === 'ebpf_studio.node') && plan.files.some((f) => f.to.startsWith('bpf/')));
    const launcher = path.join(root, 'ebpf-studio-helper');
    assert.equal(fs.statSync(launcher).mode & 0o7777, 0o755);
    assert.equal(fs.readFileSync(path.join(root, 'VERSION'), 'utf8').trim(), '9.9.9-test');
    const pol = fs.readFileSync(policy, 'utf8');
    assert.match(pol, new RegExp(`<action id="${POLKIT_ACTION.replace(/\./g, '\\.')}">`));
    assert.ok(pol.includes(`<annotate key="org.freedesktop.policykit.exec.path">${launcher}</annotate>`));
    assert.match(pol, /<message>eBPF Studio wants to trace programs/);

    // Installing again (an update) replaces the version folder in place.
    assert.equal(spawnSync('/bin/sh', ['-c', plan.script]).status, 0);

    // The installed launcher: a helper for uid 65534 (as pkexec would say) starts and launches as that user.
    if (skip) return;
    const child = spawn(launcher, [], { stdio: ['pipe', 'pipe', 'pipe'], env: { PKEXEC_UID: '65534', PATH: '/usr/bin:/bin' } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    conn.listen();
    const exited = new Promise<number | null>((res) => child.on('exit', res));
    try {
      const start = (await Promise.race([
        conn.sendRequest(proto.sessionStart, { tracer: 'memleak', options: { launch: { command: ['/bin/sleep', '20'], cwd: '/', output: 'capture', uid: 0 } } } as never),
        exited.then((c) => Promise.reject(new Error(`installed helper exited ${c}: ${stderr}`))),
      ])) as proto.SessionStartResult;
      assert.fail(`a root launch for uid 65534 must be refused, got ${JSON.stringify(start)}`);
    } catch (e) {
      assert.match((e as Error).message, /refused: the request asks to run the command as root, .*uid 65534 \(from PKEXEC_UID\)/);
    }
    const ok = (await conn.sendRequest(proto.sessionStart, { tracer: 'memleak', options: { launch: { command: ['/bin/sleep', '20'], cwd: '/', output: 'capture' } } } as never)) as proto.SessionStartResult;
    const uid = /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${ok.targets[0]}/status`, 'utf8'))![1];
    assert.equal(uid, '65534');
    await conn.sendRequest(proto.sessionStop, { sessionId: ok.sessionId });
    conn.dispose();
    child.stdin.end();
    assert.equal(await exited, 0, stderr);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('a file changed after it was hashed is not installed', { timeout: 60000 }, async (t) => {
  if (process.geteuid?.() !== 0) return t.skip('needs root to install');
  const base = tmpRoot();
  try {
    const dist = path.join(base, 'dist');
    fs.cpSync(distDir, dist, { recursive: true, filter: (s) => !s.endsWith('.map') && !s.includes('webview') });
    const root = path.join(base, 'lib');
    const plan = installPlan(dist, '9.9.9-test', node(), { root, policy: path.join(base, 'p.policy') });
    fs.appendFileSync(path.join(dist, 'helper.js'), '\n// swapped in after hashing\n');
    const r = spawnSync('/bin/sh', ['-c', plan.script], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr + r.stdout, /helper\.js: FAILED/);
    assert.equal(fs.existsSync(plan.dir), false, 'nothing is installed');
    assert.equal(fs.existsSync(`${plan.dir}.new`), false, 'the staging folder is removed');
    assert.equal(fs.existsSync(path.join(root, 'ebpf-studio-helper')), false);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('ebpf-studio install-helper --print shows the root script: each source read once (by its folder\'s owner when not root) into a root-only staging file, a sha256sum check of what was written, nothing from the user folder run', () => {
  const r = runCli(['install-helper', '--print']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^set -eu$/m);
  assert.match(r.stdout, /^(cat|\/usr\/bin\/setpriv --reuid=\d+ --regid=\d+ --clear-groups -- cat) -- '.*\/dist\/helper\.js' > '\/usr\/local\/lib\/ebpf-studio\/[^/]+\.new\/helper\.js'$/m);
  assert.match(r.stdout, /^umask 077$/m);
  assert.match(r.stdout, /^trap .*ebpf_studio_unstage/m);
  for (const f of ['runner.js', 'libebpf-studio-jvmagent.so', 'libebpf-studio-preload.so', 'ebpf-studio-launch']) assert.match(r.stdout, new RegExp(`^[0-9a-f]{64} {2}${f.replace(/\./g, '\\.')}$`, 'm'), f);
  assert.match(r.stdout, /org\.freedesktop\.policykit\.exec\.path">\/usr\/local\/lib\/ebpf-studio\/ebpf-studio-runner</);
  assert.match(r.stdout, /^sha256sum --quiet --strict -c - <<'EBPF_STUDIO_EOF'$/m);
  assert.match(r.stdout, /^[0-9a-f]{64} {2}helper\.js$/m);
  assert.match(r.stdout, /org\.freedesktop\.policykit\.exec\.path">\/usr\/local\/lib\/ebpf-studio\/ebpf-studio-helper</);
  // Every command root runs is a system tool; dist/ files appear only as what cat reads.
  for (const line of r.stdout.split('\n').filter((l) => l.includes('/dist/'))) assert.match(line, /^(cat|\/usr\/bin\/setpriv --reuid=\d+ --regid=\d+ --clear-groups -- cat) -- '/);
  const bad = runCli(['install-helper', '--bogus']);
  assert.equal(bad.code, 2, bad.stderr);
  assert.doesNotMatch(bad.stderr, /^\s+at /m, 'no stack trace');
});
