// Hostile saved session files in the workspace (with the `vscode` mock): the Sessions view's scan
// lists them without reading past SESSION_LIMITS, a valid file beside them is listed as before,
// and opening one shows an error that names the file and the limit, in well under 2 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';

const vscode = installVscodeMock();
const sessionsView = require('../../extension/editor/sessions/sessionsView') as typeof import('../../extension/editor/sessions/sessionsView');
const { makeSession, writeSession } = require('../../extension/model/sessionFile') as typeof import('../../extension/model/sessionFile');

type Saved = { kind: 'saved'; uri: { fsPath: string }; tracer?: string; title?: string };
type Tree = { getChildren(n?: unknown): Promise<unknown[]> };

test('the Sessions view lists hostile session files unread and opening one names the limit', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-session-limits-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const head = '{"format":"ebpf-studio-session","version":1,"tracer":"profile","title":"t","startedAt":"2026-01-01T00:00:00Z","data":';
  const files = {
    'deep.ebpf-session.json': `${head}${'['.repeat(100_000)}`,
    'many.ebpf-session.json': `${head}{"profile":{"frames":[],"stacks":[${'{},'.repeat(2_000_000)}{}],"total":1},"warnings":[]}}`,
    'ok.ebpf-session.json': writeSession(makeSession('memleak', 'Leaks: pid 7', { totalBytes: 1, totalAllocations: 1, dropped: 0, stacks: [] }, new Date(0))),
  };
  for (const [n, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, n), text);
  const huge = path.join(dir, 'huge.ebpf-session.json');
  fs.writeFileSync(huge, head);
  fs.truncateSync(huge, 4 * 2 ** 30);
  vscode.workspace.findFiles = (async () => fs.readdirSync(dir).map((n) => vscode.Uri.file(path.join(dir, n)))) as typeof vscode.workspace.findFiles;
  sessionsView.activate(fakeContext(dir) as never);
  const tree = recorded.trees.get('ebpfStudio.sessions') as Tree;

  const t0 = Date.now();
  const saved = (await tree.getChildren({ kind: 'group', group: 'saved' })) as Saved[];
  const byName = new Map(saved.map((s) => [path.basename(s.uri.fsPath), s]));
  assert.deepEqual([...byName.keys()].sort(), ['deep.ebpf-session.json', 'huge.ebpf-session.json', 'many.ebpf-session.json', 'ok.ebpf-session.json']);
  assert.equal(byName.get('ok.ebpf-session.json')?.title, 'Leaks: pid 7');
  for (const n of ['deep', 'huge', 'many']) assert.equal(byName.get(`${n}.ebpf-session.json`)?.tracer, undefined, `${n} is listed as unknown`);

  const expect = { deep: 'maxJsonDepth', huge: 'maxFileBytes', many: 'maxJsonHeapBytes' };
  for (const [n, limit] of Object.entries(expect)) {
    recorded.errors.length = 0;
    await vscode.commands.executeCommand('ebpfStudio.sessions.open', byName.get(`${n}.ebpf-session.json`));
    assert.equal(recorded.errors.length, 1, `one error for ${n}`);
    assert.match(recorded.errors[0], new RegExp(`${n}\\.ebpf-session\\.json.*over the limit ${limit}`));
  }
  const ms = Date.now() - t0;
  console.log(`  scan of 4 files and 3 refused opens: ${ms} ms`);
  assert.ok(ms < 2000, `${ms} ms`);
});
