// The language server over the real protocol: started from source (extension/lsp/server.ts via
// tsx) on stdio, initialized like VS Code does, then asked for completion and hover and watched
// for SEC() diagnostics.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';

const root = path.resolve(__dirname, '..', '..');
let child: ChildProcess;
let conn: MessageConnection;
const diagnostics = new Map<string, { message: string; range: { start: { line: number; character: number } } }[]>();
const uri = 'file:///work/probe.bpf.c';
const text = [
  '#include "vmlinux.h"',
  'SEC("tracepoitn/sched/sched_switch")',
  'int on_switch(void *ctx)',
  '{',
  '\t__u64 id = bpf_get_current_pid_tgid();',
  '\treturn 0;',
  '}',
  '',
].join('\n');

before(async () => {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-lsp-'));
  child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'extension/lsp/server.ts'), '--stdio'], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  conn.onNotification('textDocument/publishDiagnostics', (p: { uri: string; diagnostics: never[] }) => void diagnostics.set(p.uri, p.diagnostics));
  conn.onNotification('window/logMessage', () => undefined);
  conn.listen();
  const vmlinux = path.join(root, 'build', 'vmlinux.h');
  const init = (await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    capabilities: {},
    initializationOptions: { cacheDir: cache, vmlinuxHeader: fs.existsSync(vmlinux) ? vmlinux : undefined },
  })) as { capabilities: { completionProvider?: unknown; hoverProvider?: boolean } };
  assert.ok(init.capabilities.completionProvider);
  assert.equal(init.capabilities.hoverProvider, true);
  await conn.sendNotification('initialized', {});
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'c', version: 1, text } });
});

after(() => {
  conn?.dispose();
  child?.kill();
});

async function until<T>(f: () => T | undefined, ms = 10_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('publishes a diagnostic on the misspelled SEC() name', async () => {
  const d = await until(() => diagnostics.get(uri));
  assert.equal(d.length, 1);
  assert.match(d[0].message, /tracepoitn.*Did you mean "tracepoint\/sched\/sched_switch"/);
  assert.deepEqual(d[0].range.start, { line: 1, character: 5 });
});

test('completes helpers with a snippet and a text edit range', async () => {
  const items = (await conn.sendRequest('textDocument/completion', { textDocument: { uri }, position: { line: 4, character: 22 } })) as {
    label: string;
    insertTextFormat: number;
    textEdit: { range: { start: { character: number } }; newText: string };
  }[];
  const it = items.find((i) => i.label === 'bpf_get_current_pid_tgid');
  assert.ok(it, `items: ${items.map((i) => i.label).join(', ')}`);
  assert.equal(it.insertTextFormat, 2);
  assert.equal(it.textEdit.range.start.character, 12);
  assert.equal(it.textEdit.newText, 'bpf_get_current_pid_tgid()');
});

test('hovers helpers with their libbpf documentation', async (t) => {
  if (!fs.existsSync('/usr/include/bpf/bpf_helper_defs.h')) return t.skip('libbpf-dev is not installed');
  const h = (await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 4, character: 20 } })) as { contents: { value: string } } | null;
  assert.ok(h);
  assert.match(h.contents.value, /Get the current pid and tgid/);
});

test('fixing the name clears the diagnostic', async () => {
  diagnostics.delete(uri);
  await conn.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: 1, character: 5 }, end: { line: 1, character: 15 } }, text: 'tracepoint' }],
  });
  const d = await until(() => diagnostics.get(uri));
  assert.deepEqual(d, []);
});

test('USDT probes of a binary: completed after "usdt/PATH:" and an unknown one warned about', async (t) => {
  const libjvm = '/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so';
  if (!fs.existsSync(libjvm)) return t.skip(`${libjvm} is absent (apt-get install openjdk-17-jdk-headless)`);
  const usdtUri = 'file:///work/usdt.bpf.c';
  const src = [`SEC("usdt/${libjvm}:hotspot:gc__begn")`, 'int on_gc(void *ctx) { return 0; }', `SEC("usdt/${libjvm}:hotspot:gc__end")`, ''].join('\n');
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri: usdtUri, languageId: 'c', version: 1, text: src } });
  const d = await until(() => diagnostics.get(usdtUri), 30_000);
  assert.equal(d.length, 1, JSON.stringify(d));
  assert.match(d[0].message, /no USDT probe "hotspot:gc__begn" .*Did you mean ".*:hotspot:gc__begin"\?/);
  const line2 = src.split('\n')[2];
  const character = line2.indexOf('gc__end') + 'gc__'.length;
  const res = (await conn.sendRequest('textDocument/completion', { textDocument: { uri: usdtUri }, position: { line: 2, character } })) as {
    label: string;
    textEdit?: { range: { start: { character: number } } };
  }[];
  assert.ok(Array.isArray(res), 'a binary\'s probes are sent whole, not as an incomplete list');
  assert.deepEqual(res.map((i) => i.label).sort(), ['hotspot:gc__begin', 'hotspot:gc__end']);
  assert.equal(res[0].textEdit?.range.start.character, line2.indexOf('hotspot:gc__'));
});
