// Hostile profile files against the bounded readers: each file below once ran a reader out of
// memory or for minutes (a 5 KB pprof, a 1.7 MB speedscope, gzip bombs, ...). Each is generated
// here, read by a child process (readerLimitsChild.ts) so its peak RSS is measured alone, and must
// end with an ImportError naming the limit and the file in under 2 s of CPU with under 200 MB of
// RSS growth. Then the worker (heap limit, timeout), the CLI's exit, the URL fetch's byte bound,
// and the valid files that must still read exactly as before.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { hostileFiles, speedscopeEventedRamp, pprofLineBomb } from './hostileProfiles';
import { loadProfileBytes } from '../../extension/sys/profileFile';
import { readProfile } from '../../extension/sys/profileReader';
import { ImportError, LimitError, PROFILE_LIMITS, ReadBudget, SESSION_LIMITS, checkJsonDepth } from '../../extension/model/readLimits';
import { makeSession, readSession, writeSession } from '../../extension/model/sessionFile';
import { fromSessionFile } from '../../extension/model/jvmTimeline';
import { readSessionText } from '../../extension/sys/sessionText';
import { fromSpeedscope } from '../../extension/model/flamegraph/formats';
import { fromCpuProfile } from '../../extension/model/flamegraph/cpuprofile';
import { profileDiffCommand } from '../../extension/cli/commands/profileDiff';
import { repoRoot } from '../helpers';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reader-limits-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const MAX_CPU_MS = 2000;
/** wall time is only bounded loosely: the CPUs here are shared with other test runs */
const MAX_WALL_MS = 20_000;
const MAX_GROWTH_MB = 200;

interface ChildReport {
  stacks?: number;
  tracer?: string;
  error?: { importError: boolean; class: string; message: string; limit?: string };
  wallMs: number;
  cpuMs: number;
  growthMB: number;
}

function readInChild(file: string, mode?: 'session'): ChildReport {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'readerLimitsChild.ts'), file, ...(mode ? [mode] : [])], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `the child died (${r.signal ?? r.status}): ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout) as ChildReport;
}

describe('hostile files end fast, small and with the limit named', () => {
  for (const h of hostileFiles()) {
    test(`${h.what} (${h.bytes.length.toLocaleString('en-US')} bytes)`, () => {
      const file = path.join(dir, h.name);
      fs.writeFileSync(file, h.bytes);
      const r = readInChild(file);
      console.log(`  ${h.name}: ${r.error?.class}: cpu ${r.cpuMs.toFixed(0)} ms, wall ${r.wallMs.toFixed(0)} ms, +${r.growthMB.toFixed(0)} MB RSS`);
      assert.ok(r.error, `the file was read (${r.stacks} stacks)`);
      assert.ok(r.error.importError, `not an ImportError: ${r.error.class}: ${r.error.message}`);
      assert.match(r.error.message, h.expect);
      if (r.error.limit) assert.ok(r.error.message.includes(h.name), `the message names the file: ${r.error.message}`);
      assert.ok(r.cpuMs < MAX_CPU_MS, `${r.cpuMs} ms of CPU`);
      assert.ok(r.wallMs < MAX_WALL_MS, `${r.wallMs} ms`);
      assert.ok(r.growthMB < MAX_GROWTH_MB, `${r.growthMB} MB`);
    });
  }
});

describe('the worker', () => {
  test('reads a valid file as the in-process reader does', async () => {
    const text = Buffer.from('main;work;leaf 12\nmain;idle 3\n');
    assert.deepEqual(await readProfile(text, 'w.folded'), loadProfileBytes(text, 'w.folded'));
  });

  test('a file past every count but the heap ends the worker, not this thread', async () => {
    const loose = { ...PROFILE_LIMITS, maxTotalFrames: 1e12, maxStackDepth: 1e9, maxSamples: 1e9, maxReaderHeapMb: 64 };
    await assert.rejects(readProfile(speedscopeEventedRamp(), 'ramp.speedscope.json', loose), (e: Error) => e instanceof LimitError && e.limit === 'maxReaderHeapMb' && /ramp\.speedscope\.json/.test(e.message));
  });

  test('a read past maxReadMs is stopped', async () => {
    const slow = { ...PROFILE_LIMITS, maxTotalFrames: 1e12, maxStackDepth: 1e9, maxSamples: 1e9, maxReadMs: 50 };
    await assert.rejects(readProfile(speedscopeEventedRamp(), 'ramp.speedscope.json', slow), (e: Error) => e instanceof LimitError && e.limit === 'maxReadMs');
  });

  test('a file over maxFileBytes is refused before a worker starts', async () => {
    await assert.rejects(readProfile(Buffer.alloc(2048), 'big.folded', { ...PROFILE_LIMITS, maxFileBytes: 1024 }), (e: Error) => e instanceof LimitError && e.limit === 'maxFileBytes');
  });
});

test('profile-diff exits with the limit in its message', async () => {
  const bomb = path.join(dir, 'bomb.pb');
  fs.writeFileSync(bomb, pprofLineBomb());
  const ok = path.join(dir, 'ok.folded');
  fs.writeFileSync(ok, 'main;a 1\n');
  await assert.rejects(
    profileDiffCommand.run([bomb, ok], { out: () => {}, err: () => {} }),
    (e: Error & { kind?: string }) => e.kind === 'input' && /bomb\.pb.*maxLinesPerLocation/.test(e.message),
  );
});

test('Open CPU Profile from URL refuses an answer larger than maxFileBytes', async () => {
  // Content-Length says it: refused before the body is read
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Length': String(PROFILE_LIMITS.maxFileBytes + 1) });
    res.write(Buffer.alloc(1024));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { installVscodeMock, fakeContext } = await import('../mocks/vscode');
    const vscode = installVscodeMock();
    // the mock's withProgress gives no cancellation token; VS Code's does
    vscode.window.withProgress = (async (_o: unknown, task: (p: unknown, t: unknown) => Promise<unknown>) =>
      task({ report: () => undefined }, { isCancellationRequested: false, onCancellationRequested: () => ({ dispose: () => undefined }) })) as typeof vscode.window.withProgress;
    const feature = require('../../extension/editor/features/profile/profileUrl') as typeof import('../../extension/editor/features/profile/profileUrl');
    const port = (server.address() as AddressInfo).port;
    const ctx = { ...fakeContext(dir), secrets: { get: async () => undefined, store: async () => undefined } };
    const t0 = Date.now();
    await assert.rejects(feature.openProfileUrl(ctx as never, `http://127.0.0.1:${port}/debug/pprof/profile?seconds=1`), /maxFileBytes/);
    assert.ok(Date.now() - t0 < 10_000, 'refused without waiting for the body');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

describe('readers stay exact on valid input', () => {
  test('a speedscope evented profile whose stack returns shares one frame array and keeps its weights and lines', () => {
    const p = fromSpeedscope({
      shared: { frames: [{ name: 'main', file: '/m.c', line: 3 }, { name: 'work', file: '/w.c', line: 7 }, { name: 'work', file: '/w.c', line: 9 }] },
      profiles: [
        {
          type: 'evented',
          name: 'x',
          unit: 'none',
          startValue: 0,
          endValue: 20,
          events: [
            { type: 'O', at: 0, frame: 0 },
            { type: 'O', at: 1, frame: 1 },
            { type: 'C', at: 3, frame: 1 },
            { type: 'O', at: 4, frame: 2 },
            { type: 'C', at: 10, frame: 2 },
            { type: 'O', at: 11, frame: 1 },
            { type: 'C', at: 13, frame: 1 },
            { type: 'C', at: 20, frame: 0 },
          ],
        },
      ],
    });
    assert.deepEqual(
      p.stacks.map((s) => [s.frames.map((i) => p.frames[i].name).join(';'), s.weight]),
      [['main', 1], ['main;work', 2], ['main', 1], ['main;work', 6], ['main', 1], ['main;work', 2], ['main', 7]],
    );
    assert.equal(p.stacks[1].frames, p.stacks[5].frames, 'the returning stack is one array');
    assert.equal(p.total, 20);
    // work's most sampled line: 6 at :9 against 2 + 2 at :7
    assert.deepEqual([p.frames[1].file, p.frames[1].line], ['/w.c', 9]);
  });

  test('a .cpuprofile keeps its sample order and its stacks', () => {
    const p = fromCpuProfile({
      nodes: [
        { id: 1, callFrame: { functionName: '(root)' }, children: [2] },
        { id: 2, callFrame: { functionName: 'main', url: 'file:///app/m.js', lineNumber: 4 }, children: [3, 4] },
        { id: 3, callFrame: { functionName: 'a' } },
        { id: 4, callFrame: { functionName: 'b' } },
      ],
      samples: [3, 3, 4, 2, 3],
    });
    assert.deepEqual(
      p.stacks.map((s) => [s.frames.map((i) => p.frames[i].name).join(';'), s.weight]),
      [['main;a', 2], ['main;b', 1], ['main', 1], ['main;a', 1]],
    );
    assert.deepEqual([p.frames[p.stacks[0].frames[0]].file, p.frames[p.stacks[0].frames[0]].line], ['/app/m.js', 5]);
  });

  test('JSON depth: strings with brackets do not count, nesting does', () => {
    const budget = new ReadBudget('x.json');
    checkJsonDepth(`{"a":"${'['.repeat(1000)}","b":[[1]]}`, budget);
    assert.throws(() => checkJsonDepth('['.repeat(65), budget), (e: Error) => e instanceof LimitError && e.limit === 'maxJsonDepth');
    assert.throws(() => loadProfileBytes(Buffer.from('{"a": [1, }'), 'bad.json'), (e: Error) => e instanceof ImportError && /does not parse/.test(e.message));
  });
});

describe('hostile session files end fast, small and with the limit and the file named', () => {
  const head = '{"format":"ebpf-studio-session","version":1,"tracer":"profile","title":"t","startedAt":"2026-01-01T00:00:00Z","data":';
  const cases: { name: string; what: string; write: (file: string) => void; limit: string }[] = [
    { name: 'huge.ebpf-session.json', what: 'over maxFileBytes (1 GiB, sparse)', limit: 'maxFileBytes', write: (f) => fs.writeFileSync(f, `${head}{}}`) },
    { name: 'deep.ebpf-session.json', what: '1M nested arrays', limit: 'maxJsonDepth', write: (f) => fs.writeFileSync(f, `${head}${'['.repeat(1_000_000)}`) },
    { name: 'objects.ebpf-session.json', what: '2M empty objects in one array', limit: 'maxJsonHeapBytes', write: (f) => fs.writeFileSync(f, `${head}{"profile":{"frames":[],"stacks":[${'{},'.repeat(2_000_000)}{}],"total":1},"warnings":[]}}`) },
    { name: 'numbers.ebpf-session.json', what: '12M numbers in one array', limit: 'maxJsonHeapBytes', write: (f) => fs.writeFileSync(f, `${head}{"profile":{"frames":[],"stacks":[{"weight":1,"frames":[${'0,'.repeat(12_000_000)}0]}],"total":1},"warnings":[]}}`) },
    { name: 'strings.ebpf-session.json', what: '2M distinct strings', limit: 'maxJsonHeapBytes', write: (f) => fs.writeFileSync(f, `${head}{"profile":{"frames":[],"stacks":[],"total":1},"warnings":[${Array.from({ length: 2_000_000 }, (_, i) => `"w${i.toString(36).padStart(10, '0')}"`).join(',')}]}}`) },
  ];
  for (const c of cases) {
    test(`${c.what} ends with ${c.limit}`, () => {
      const file = path.join(dir, c.name);
      c.write(file);
      if (c.limit === 'maxFileBytes') fs.truncateSync(file, 1 << 30);
      const r = readInChild(file, 'session');
      console.log(`  ${c.name} (${fs.statSync(file).size.toLocaleString('en-US')} bytes): ${r.error?.class}: cpu ${r.cpuMs.toFixed(0)} ms, wall ${r.wallMs.toFixed(0)} ms, +${r.growthMB.toFixed(0)} MB RSS`);
      fs.rmSync(file);
      assert.ok(r.error, `the file was read (${r.tracer})`);
      assert.equal(r.error.limit, c.limit, r.error.message);
      assert.ok(r.error.importError, `not an ImportError: ${r.error.class}`);
      assert.ok(r.error.message.includes(c.name), `the message names the file: ${r.error.message}`);
      assert.ok(r.cpuMs < MAX_CPU_MS, `${r.cpuMs} ms of CPU`);
      assert.ok(r.wallMs < MAX_WALL_MS, `${r.wallMs} ms`);
      assert.ok(r.growthMB < MAX_GROWTH_MB, `${r.growthMB} MB`);
    });
  }

  // what the estimate lets through, at its edge: each kind of value it prices
  const edges = [
    { what: 'empty objects', each: 96 + 16, item: () => '{}' },
    { what: 'distinct 11-character strings', each: 48 + 12 + 16, item: (i: number) => `"w${i.toString(36).padStart(10, '0')}"` },
    { what: 'small integers', each: 16, item: (i: number) => (i ? '7' : '{}') },
    // after one object, so the array holds each number boxed, not unboxed doubles
    { what: 'fractional numbers', each: 16 + 32, item: (i: number) => (i ? '0.5' : '{}') },
  ];
  for (const e of edges) {
    test(`the most ${e.what} the limits let through still cost < 2 s and < 200 MB`, () => {
      const n = Math.floor(SESSION_LIMITS.maxJsonHeapBytes / e.each) - 1000;
      const file = path.join(dir, 'edge.ebpf-session.json');
      fs.writeFileSync(file, `${head}{"profile":{"frames":[],"stacks":[],"total":1},"warnings":[${Array.from({ length: n }, (_, i) => e.item(i)).join(',')}]}}`);
      const r = readInChild(file, 'session');
      console.log(`  ${n.toLocaleString('en-US')} ${e.what} (${fs.statSync(file).size.toLocaleString('en-US')} bytes): ${r.tracer ?? r.error?.message}: cpu ${r.cpuMs.toFixed(0)} ms, +${r.growthMB.toFixed(0)} MB RSS`);
      fs.rmSync(file);
      assert.equal(r.tracer, 'profile', r.error?.message);
      assert.ok(r.cpuMs < MAX_CPU_MS, `${r.cpuMs} ms of CPU`);
      assert.ok(r.growthMB < MAX_GROWTH_MB, `${r.growthMB} MB`);
    });
  }

  test('a valid session reads as before; the JVM timeline import and a FIFO are refused clearly', async () => {
    const doc = makeSession('profile', 'CPU: pid 1', { profile: { frames: [{ name: 'main', kind: 'native' }], stacks: [{ frames: [0], weight: 3 }], total: 3 } as never, warnings: [] }, new Date(0));
    const file = path.join(dir, 'ok.ebpf-session.json');
    fs.writeFileSync(file, writeSession(doc));
    assert.deepEqual(readSession(await readSessionText(file), 'ok.ebpf-session.json'), JSON.parse(writeSession(doc)));
    assert.throws(() => fromSessionFile(`{"format":"ebpf-studio-session","result":${'['.repeat(100)}`, 'jvm.json'), (e: Error) => e instanceof LimitError && e.limit === 'maxJsonDepth' && /jvm\.json/.test(e.message));
    const fifo = path.join(dir, 'fifo.ebpf-session.json');
    spawnSync('mkfifo', [fifo]);
    await assert.rejects(readSessionText(fifo), (e: Error) => e instanceof ImportError && /fifo\.ebpf-session\.json is not a regular file/.test(e.message));
  });
});
