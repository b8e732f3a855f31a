// The four layers end to end: the helper, started as a child process like the extension starts
// it, loads the selftest object, attaches a tracepoint, streams ring-buffer events to the
// client, and leaves no program behind once its stdin closes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as proto from '../../extension/protocol/protocol';
import type { SelftestUpdate } from '../../extension/protocol/selftest';
import { kernelSkipReason, loadedProgramNames, loadedPrograms, newProgramIds, programIdsLoaded, runCli, startHelper, waitFor } from '../helpers';

const skip = kernelSkipReason();

for (const attach of ['tracepoint', 'raw_tp', 'tp_btf'] as const) {
  test(`helper streams exec events through a ring buffer (${attach}) and detaches on stdin close`, async (t) => {
    if (skip) return t.skip(skip);
    const h = startHelper();
    const events: SelftestUpdate['events'] = [];
    const before = loadedPrograms();
    let ours: number[] = [];
    h.conn.onNotification(proto.sessionData, (p) => {
      events.push(...(p.update as SelftestUpdate).events);
    });
    try {
      const start = await h.conn.sendRequest(proto.sessionStart, { tracer: 'selftest', options: { parentPid: process.pid, magic: 4242, attach } });
      assert.match(start.sessionId, /^s\d+$/);
      ours = newProgramIds(before, (n) => n.startsWith('on_exec'));
      assert.ok(ours.length > 0, 'program is loaded while the session runs');
      const pids: number[] = [];
      for (let i = 0; i < 5; i++) pids.push(spawnSync('/bin/true').pid!);
      assert.ok(await waitFor(() => pids.every((p) => events.some((e) => e.pid === p)), 5000), `saw ${JSON.stringify(events)} for ${pids}`);
      assert.ok(events.every((e) => e.magic === 4242), 'rodata reached the kernel side');
      assert.ok(events.filter((e) => pids.includes(e.pid)).every((e) => e.comm === 'true'));
      const snap = await h.conn.sendRequest(proto.sessionSnapshot, { sessionId: start.sessionId });
      assert.equal((snap.result as { tracer: string }).tracer, 'selftest');
    } finally {
      const closedAt = Date.now();
      h.conn.dispose();
      h.child.stdin.end();
      const { code, at } = await h.exited;
      assert.equal(code, 0, h.stderr());
      assert.ok(at - closedAt < 1000, `helper exited ${at - closedAt} ms after stdin closed`);
    }
    assert.ok(await waitFor(() => programIdsLoaded(ours).length === 0, 1000), 'no selftest program remains after the helper exits');
  });
}

test('helper answers capabilities with the attach kinds that work here', async (t) => {
  if (skip) return t.skip(skip);
  const h = startHelper();
  try {
    const caps = await h.conn.sendRequest(proto.capabilities);
    assert.equal(caps.btf, true);
    assert.equal(caps.root, true);
    for (const k of ['tracepoint', 'raw_tp', 'tp_btf', 'uprobe', 'perf_event'] as const) assert.equal(caps.attach[k].ok, true, `${k}: ${caps.attach[k].error}`);
    assert.equal(caps.attach.kprobe.ok, false, 'kprobes do not exist on this kernel');
  } finally {
    h.conn.dispose();
    h.child.stdin.end();
    await h.exited;
  }
});

test('helper killed with SIGKILL leaves no program behind', async (t) => {
  if (skip) return t.skip(skip);
  const h = startHelper();
  const before = loadedPrograms();
  await h.conn.sendRequest(proto.sessionStart, { tracer: 'selftest', options: { parentPid: process.pid, magic: 1, attach: 'raw_tp' } });
  const ours = newProgramIds(before, (n) => n === 'on_exec_raw');
  assert.ok(ours.length > 0);
  h.child.kill('SIGKILL');
  await h.exited;
  h.conn.dispose();
  assert.ok(await waitFor(() => programIdsLoaded(ours).length === 0, 2000), 'the kernel dropped the program with the process');
});

test('ebpf-studio doctor --json reports BTF and the attach kinds that work', (t) => {
  if (skip) return t.skip(skip);
  const r = runCli(['doctor', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const caps = JSON.parse(r.stdout) as proto.Capabilities;
  assert.equal(caps.btf, true);
  assert.equal(caps.attach.tracepoint.ok, true);
  assert.equal(caps.attach.uprobe.ok, true);
  assert.equal(caps.attach.perf_event.ok, true);
  assert.equal(caps.attach.kprobe.ok, false);
  assert.match(caps.attach.kprobe.error ?? '', /kprobe|ENOENT|not/i);
  assert.ok(caps.jdks.some((j) => j.usdt), 'the Debian OpenJDK has USDT probes');
  assert.equal(caps.attach.usdt.ok, true, caps.attach.usdt.error);
});

test('ebpf-studio doctor (text) is readable and names the JDKs', (t) => {
  if (skip) return t.skip(skip);
  const r = runCli(['doctor']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /BTF\s+yes/);
  assert.match(r.stdout, /tracepoint\s+works/);
  assert.match(r.stdout, /openjdk.*USDT probes: \d+/);
});

test('CLI selftest prints exec events as JSON', async (t) => {
  if (skip) return t.skip(skip);
  const { startCli } = await import('../helpers');
  const run = startCli(['selftest', '--parent', String(process.pid), '--duration', '2', '--json']);
  await waitFor(() => loadedProgramNames().includes('on_exec_tp'), 3000);
  const pid = spawnSync('/bin/true').pid;
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as { tracer: string; events: { pid: number }[] };
  assert.equal(doc.tracer, 'selftest');
  assert.ok(doc.events.some((e) => e.pid === pid));
});
