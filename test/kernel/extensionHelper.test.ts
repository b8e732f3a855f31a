// The extension host side of the round trip: HelperClient (with a mocked `vscode` module)
// starts the real helper, asks for capabilities and processes, runs a selftest session through
// sessions.ts, and notices when the helper dies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import { kernelSkipReason, repoRoot, waitFor } from '../helpers';

installVscodeMock();
 
const { HelperClient, setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');
 
const sessions = require('../../extension/editor/sessions/liveSessions') as typeof import('../../extension/editor/sessions/liveSessions');
 
const proto = require('../../extension/protocol/protocol') as typeof import('../../extension/protocol/protocol');

const skip = kernelSkipReason();

test('extension host → helper: capabilities, processes, a streamed session, helper death', async (t) => {
  if (skip) return t.skip(skip);
  const vscode = installVscodeMock();
  const ctx = fakeContext(repoRoot);
  const client = new HelperClient(repoRoot, vscode.window.createOutputChannel('test') as never);
  setHelper(client);
  sessions.activate(ctx as never);
  try {
    const caps = await client.request(proto.capabilities, undefined as never);
    assert.equal(caps.btf, true);
    const procs = await client.request(proto.listProcesses, {});
    assert.ok(procs.some((p) => p.pid === process.pid));

    const seen: number[] = [];
    let ended: string | undefined;
    const s = await sessions.startSession('selftest', { parentPid: process.pid, magic: 7, attach: 'tracepoint' }, 'selftest', {
      onUpdate: (u) => seen.push(...u.events.map((e) => e.pid)),
      onEnded: (reason) => (ended = reason),
    });
    assert.equal(recorded.context.get('ebpfStudio.sessionRunning'), true);
    const pid = spawnSync('/bin/true').pid!;
    assert.ok(await waitFor(() => seen.includes(pid), 5000), 'the exec event reached the extension host');
    const result = await s.stop();
    assert.ok(result && result.events.some((e) => e.pid === pid));
    assert.equal(ended, 'stopped');
    assert.equal(recorded.context.get('ebpfStudio.sessionRunning'), false);

    // A session running when the helper dies ends with its reason; the next request restarts it.
    let endedMsg: string | undefined;
    await sessions.startSession('selftest', { parentPid: process.pid, magic: 7, attach: 'raw_tp' }, 'doomed', {
      onUpdate: () => undefined,
      onEnded: (_r, _res, msg) => (endedMsg = msg),
    });
    const childPid = (client as unknown as { child: { pid: number } }).child.pid;
    process.kill(childPid, 'SIGKILL');
    assert.ok(await waitFor(() => endedMsg !== undefined, 3000), 'the session learned of the death');
    assert.match(endedMsg!, /helper died \(killed by SIGKILL/);
    assert.ok(recorded.errors.some((e) => /privileged helper died/.test(e)));
    const again = await client.request(proto.capabilities, undefined as never);
    assert.equal(again.btf, true, 'the helper restarted on the next request');
  } finally {
    client.dispose();
    for (const d of ctx.subscriptions) d.dispose();
  }
});
