// The helper decides who launched commands run as: a helper raised to root for another user
// (simulated with SUDO_UID/SUDO_GID, as sudo sets them) runs a memleak `launch` as that user
// whatever uid the request names, refuses a request to run as root, and refuses to start at
// all from a folder that user could write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import { distDir, kernelSkipReason, rootOwnedHelperJs } from '../helpers';

const skip = kernelSkipReason();
const NOBODY = 65534;

function startHelper(script: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH, ...env } });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, conn, exited, stderr: () => stderr };
}

function uidLine(pid: number): number[] {
  const m = /^Uid:\s+(.*)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m![1].trim().split(/\s+/).map(Number);
}

for (const asked of [{ label: 'a foreign uid', ids: { uid: 4321, gid: 4321 } }, { label: 'no uid', ids: {} }]) {
  test(`a launch request with ${asked.label} runs as the invoking user`, { timeout: 30000 }, async (t) => {
    if (skip) return t.skip(skip);
    if (process.geteuid?.() !== 0) return t.skip('needs root to start the helper for another user');
    const h = startHelper(rootOwnedHelperJs(), { SUDO_UID: String(NOBODY), SUDO_GID: String(NOBODY) });
    try {
      const start = (await h.conn.sendRequest(proto.sessionStart, {
        tracer: 'memleak',
        options: { launch: { command: ['/bin/sleep', '20'], cwd: '/', output: 'capture', ...asked.ids }, intervalS: 1 },
      } as never)) as proto.SessionStartResult;
      const pid = start.targets[0];
      assert.ok(pid > 0, JSON.stringify(start));
      assert.deepEqual(uidLine(pid), [NOBODY, NOBODY, NOBODY, NOBODY], 'real, effective, saved and fs uid are the invoking user');
      await h.conn.sendRequest(proto.sessionStop, { sessionId: start.sessionId });
    } finally {
      h.conn.dispose();
      h.child.stdin.end();
      await h.exited;
    }
  });
}

test('a launch request asking for root is refused when the invoking user is not root', { timeout: 30000 }, async (t) => {
  if (skip) return t.skip(skip);
  if (process.geteuid?.() !== 0) return t.skip('needs root to start the helper for another user');
  const h = startHelper(rootOwnedHelperJs(), { SUDO_UID: String(NOBODY), SUDO_GID: String(NOBODY) });
  try {
    await assert.rejects(
      h.conn.sendRequest(proto.sessionStart, { tracer: 'memleak', options: { launch: { command: ['/bin/true'], cwd: '/', uid: 0, gid: 0 } } } as never),
      (e: Error) => /refused: the request asks to run the command as root/.test(e.message) && /uid 65534/.test(e.message),
    );
  } finally {
    h.conn.dispose();
    h.child.stdin.end();
    await h.exited;
  }
});

test('a helper raised to root for another user refuses to start from a folder that user can write', { timeout: 30000 }, async (t) => {
  if (process.geteuid?.() !== 0) return t.skip('needs root: the check applies only to a helper running as root');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-writable-'));
  try {
    for (const f of ['helper.js', 'ebpf_studio.node', 'ebpf-studio-launch']) if (fs.existsSync(path.join(distDir, f))) fs.copyFileSync(path.join(distDir, f), path.join(dir, f));
    fs.cpSync(path.join(distDir, 'bpf'), path.join(dir, 'bpf'), { recursive: true });
    fs.chownSync(dir, NOBODY, NOBODY);
    const h = startHelper(path.join(dir, 'helper.js'), { SUDO_UID: String(NOBODY), SUDO_GID: String(NOBODY) });
    const code = await h.exited;
    assert.equal(code, 3, h.stderr());
    assert.match(h.stderr(), /refusing to run as root for uid 65534 .*owned by uid 65534, not root/);
    assert.match(h.stderr(), /Install Privileged Helper/);

    // The same files root-owned but group-writable are refused too.
    fs.chownSync(dir, 0, 0);
    fs.chmodSync(dir, 0o775);
    const g = startHelper(path.join(dir, 'helper.js'), { PKEXEC_UID: String(NOBODY) });
    assert.equal(await g.exited, 3, g.stderr());
    assert.match(g.stderr(), /is writable by group/);

    // Started by root for root (no pkexec/sudo user), the check does not apply: root runs its own files.
    const r = startHelper(path.join(dir, 'helper.js'), {});
    const caps = await r.conn.sendRequest(proto.capabilities);
    assert.ok(caps, 'a root helper for root starts');
    r.conn.dispose();
    r.child.stdin.end();
    assert.equal(await r.exited, 0, r.stderr());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
