// "Open CPU Profile from URL…" with the `vscode` mock against a real HTTP server on loopback that
// serves a gzipped pprof the way net/http/pprof (and `ebpf-studio agent`) do: the URL check, a
// 401 answered with a bearer token that is then kept per origin, the bytes stored and handed to
// ebpfStudio.openProfile (which gives the flame graph and the CodeLens), and an HTTP error named.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import { encodePprofGz } from '../../extension/sys/profileFile';
import type { ProfileResult } from '../../extension/protocol/profile';

const vscode = installVscodeMock();
const feature = require('../../extension/editor/features/profile/profileUrl') as typeof import('../../extension/editor/features/profile/profileUrl');

const frame = (fn: string, line: number) => ({ address: '0x401000', module: '/srv/app', function: fn, file: '/srv/src/app.c', line, kind: 'native' as const });
const result: ProfileResult = { tracer: 'profile', frequency: 99, samples: 30, lost: 0, stacks: [{ count: 30, pid: 7, tid: 7, comm: 'app', frames: [frame('hot', 12), frame('main', 30)] }] };
const gz = encodePprofGz(result);
const TOKEN = 'b'.repeat(32);
const hits: string[] = [];
const server = http.createServer((req, res) => {
  hits.push(`${req.url} ${req.headers.authorization ?? '-'}`);
  if (req.url?.startsWith('/missing')) {
    res.writeHead(404).end('no such endpoint');
    return;
  }
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    res.writeHead(401, { 'WWW-Authenticate': 'Bearer' }).end('unauthorized');
    return;
  }
  res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(gz);
});
after(() => server.close());

test('checkProfileUrl: http(s) only, seconds read for the wait', () => {
  const ok = feature.checkProfileUrl('http://h:1/debug/pprof/profile?seconds=5');
  assert.ok(typeof ok !== 'string' && ok.seconds === 5);
  const dflt = feature.checkProfileUrl('https://h/debug/pprof/profile');
  assert.ok(typeof dflt !== 'string' && dflt.seconds === 30);
  assert.match(feature.checkProfileUrl('h:9435') as string, /only http/);
  assert.match(feature.checkProfileUrl('not a url') as string, /not a URL/);
  assert.match(feature.checkProfileUrl('http://h/?seconds=-1') as string, /seconds=-1/);
});

test('a 401 asks for a token once; the profile is stored, opened, and the token kept for that origin', async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const storage = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-url-'));
  const written = new Map<string, Uint8Array>();
  (vscode.workspace as unknown as { fs: unknown }).fs = {
    writeFile: async (u: { fsPath: string }, b: Uint8Array) => {
      written.set(u.fsPath, b);
      fs.writeFileSync(u.fsPath, b);
    },
    readFile: async (u: { fsPath: string }) => fs.readFileSync(u.fsPath),
  };
  const secrets = new Map<string, string>();
  const ctx = {
    ...fakeContext('/tmp'),
    globalStorageUri: vscode.Uri.file(storage),
    secrets: { get: async (k: string) => secrets.get(k), store: async (k: string, v: string) => void secrets.set(k, v) },
    globalState: { get: <T>(_k: string, d: T) => d, update: async () => undefined },
  };
  const opened: string[] = [];
  vscode.commands.registerCommand('ebpfStudio.openProfile', (u: unknown) => void opened.push((u as { fsPath: string }).fsPath));
  let asked = 0;
  vscode.window.showInputBox = (async (o: { password?: boolean }) => {
    asked++;
    assert.equal(o.password, true);
    return TOKEN;
  }) as never;
  // The mock's withProgress gives no cancellation token; VS Code's does.
  vscode.window.withProgress = (async (_o: unknown, task: (p: unknown, t: unknown) => Promise<unknown>) =>
    task({ report: () => undefined }, { isCancellationRequested: false, onCancellationRequested: () => ({ dispose: () => undefined }) })) as never;
  feature.activate(ctx as never);
  const file = (await vscode.commands.executeCommand('ebpfStudio.openProfileUrl', `${base}/debug/pprof/profile?seconds=1`)) as string;
  assert.ok(file, `no file: ${recorded.errors.join('\n')}`);
  assert.equal(asked, 1);
  assert.deepEqual(opened, [file]);
  assert.ok(Buffer.from(written.get(file)!).equals(gz), 'the stored bytes are not what the endpoint served');
  assert.equal(secrets.get(`ebpfStudio.profileUrl.token:${base}`), TOKEN);
  assert.deepEqual(hits.map((h) => h.split(' ')[1]), ['-', `Bearer`]);
  assert.match(recorded.infos.at(-1)!, /opened 30 samples from 127\.0\.0\.1/);

  // The second fetch sends the kept token at once.
  hits.length = 0;
  await vscode.commands.executeCommand('ebpfStudio.openProfileUrl', `${base}/debug/pprof/profile?seconds=1`);
  assert.equal(asked, 1);
  assert.deepEqual(hits.map((h) => h.split(' ')[1]), ['Bearer']);

  const before = recorded.errors.length;
  await vscode.commands.executeCommand('ebpfStudio.openProfileUrl', `${base}/missing?seconds=1`);
  assert.match(recorded.errors.slice(before).join('\n'), /answered HTTP 404: no such endpoint/);
  fs.rmSync(storage, { recursive: true, force: true });
});
