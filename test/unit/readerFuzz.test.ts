// A bounded fuzz run of the profile readers (loadProfileBytes: gzip, pprof, folded, speedscope,
// .cpuprofile, our --json) and the saved session readers (*.ebpf-session.json, the JVM timeline's
// export: bounded text, then readSession / fromSessionFile): from a valid seed file of each format, fast-check makes byte
// mutations (flips, inserts, deletes, truncation; pprof also re-gzipped after mutating), random
// bytes, and for JSON formats structural mutations (a random value put at a random path). Every
// case must load or throw an ImportError (a session reader also its StudioError of kind input),
// within 2 s; any other exception is a reader bug.
// FUZZ_SEED=N reproduces a run, FUZZ_RUNS=N changes the cases per format (default 300).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { loadProfileBytes } from '../../extension/sys/profileFile';
import { ImportError } from '../../extension/model/readLimits';
import { toPprof } from '../../extension/model/pprof';
import { toSpeedscope, fromFolded } from '../../extension/model/flamegraph/formats';
import type { ProfileResult } from '../../extension/protocol/profile';
import { makeSession, readSession, writeSession } from '../../extension/model/sessionFile';
import { fromSessionFile, toSessionFile } from '../../extension/model/jvmTimeline';
import { sessionTextOf } from '../../extension/sys/sessionText';
import { StudioError } from '../../extension/protocol/errors';
import type { JvmResult } from '../../extension/protocol/jvm';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const MAX_CASE_MS = 2000;

const fr = (fn: string, line: number, extra: object = {}) => ({ address: `0x${(0x401000 + line).toString(16)}`, module: '/usr/bin/app', function: fn, file: '/src/app.c', line, kind: 'native' as const, ...extra });
const result: ProfileResult = {
  tracer: 'profile',
  frequency: 99,
  samples: 60,
  lost: 1,
  stacks: [
    { count: 40, pid: 1, tid: 1, comm: 'app', frames: [fr('hot', 12), fr('inl', 3, { inlined: true }), fr('main', 30)] },
    { count: 20, pid: 1, tid: 2, comm: 'app', frames: [{ ...fr('k', 1), kind: 'kernel', module: '[kernel]' }, fr('main', 30)] },
  ],
};
const folded = 'main;work;hot 12\nmain;idle_[k] 3\nmain;Foo.bar_[j] 7\n';
const evented = {
  $schema: 'https://www.speedscope.app/file-format-schema.json',
  shared: { frames: [{ name: 'main', file: '/m.c', line: 1 }, { name: 'work' }] },
  profiles: [{ type: 'evented', name: 'e', unit: 'none', startValue: 0, endValue: 9, events: [{ type: 'O', at: 0, frame: 0 }, { type: 'O', at: 2, frame: 1 }, { type: 'C', at: 5, frame: 1 }, { type: 'C', at: 9, frame: 0 }] }],
};
const cpuprofile = {
  nodes: [
    { id: 1, callFrame: { functionName: '(root)' }, children: [2] },
    { id: 2, callFrame: { functionName: 'main', url: 'file:///a.js', lineNumber: 3 }, children: [3] },
    { id: 3, callFrame: { functionName: 'hot' }, hitCount: 2 },
  ],
  samples: [3, 2, 3],
};
const profileSession = makeSession('profile', 'CPU: pid 1 (app)', { profile: { frames: [{ name: 'main', kind: 'native' }, { name: 'hot', kind: 'native', file: '/a.c', line: 3 }], stacks: [{ frames: [1, 0], weight: 5 }, { frames: [0], weight: 1 }], total: 6 } as never, warnings: ['w'] }, new Date(0), new Date(1000));
const leakSession = makeSession('memleak', 'Leaks: pid 1', { totalBytes: 64, totalAllocations: 2, dropped: 0, stacks: [] }, new Date(0));
const histSession = makeSession('runqlat', 'Run queue', { scope: 'all', per: 'process', unit: 'us', updates: [{ interval: 1 } as never] }, new Date(0));
const jvmSession = toSessionFile({ tracer: 'jvm', pid: 1, startNs: 0, endNs: 10, threads: [], gc: [], safepoints: [], runq: [], cpu: [], stacks: [] } as unknown as JvmResult, new Date(0));
type Reader = (b: Buffer, name: string) => unknown;
/** A saved session as the editor reads it: bounded text, then the validating reader. */
const sessionReader = (read: (text: string, name: string) => unknown): Reader => (b, name) => read(sessionTextOf(b, name), name);
/** What a session reader throws for a bad file besides a LimitError: readSession's input error, the JVM reader's plain Error. */
const sessionError = (e: unknown) => e instanceof StudioError && e.kind === 'input';
const jvmError = (e: unknown) => e instanceof Error && e.constructor === Error;
const json = (v: unknown) => ({ bytes: Buffer.from(JSON.stringify(v)), json: v });
const seeds: { name: string; bytes: Buffer; json?: unknown; gzip?: boolean; read?: Reader; meant?: (e: unknown) => boolean }[] = [
  { name: 'p.pb', bytes: Buffer.from(toPprof(result)) },
  { name: 'p.pb.gz', bytes: Buffer.from(toPprof(result)), gzip: true },
  { name: 'f.folded', bytes: Buffer.from(folded) },
  { name: 's.speedscope.json', bytes: Buffer.from(JSON.stringify(toSpeedscope(fromFolded(folded)))), json: toSpeedscope(fromFolded(folded)) },
  { name: 'e.speedscope.json', bytes: Buffer.from(JSON.stringify(evented)), json: evented },
  { name: 'c.cpuprofile', bytes: Buffer.from(JSON.stringify(cpuprofile)), json: cpuprofile },
  { name: 'r.json', bytes: Buffer.from(JSON.stringify(result)), json: result },
  { name: 'p.ebpf-session.json', ...json(JSON.parse(writeSession(profileSession))), read: sessionReader(readSession), meant: sessionError },
  { name: 'm.ebpf-session.json', ...json(JSON.parse(writeSession(leakSession))), read: sessionReader(readSession), meant: sessionError },
  { name: 'h.ebpf-session.json', ...json(JSON.parse(writeSession(histSession))), read: sessionReader(readSession), meant: sessionError },
  { name: 'jvm.ebpf-session.json', ...json(jvmSession), read: sessionReader(fromSessionFile), meant: jvmError },
];

type Edit = { at: number; op: 'flip' | 'set' | 'insert' | 'delete'; byte: number };
const edit = fc.record({ at: fc.nat(), op: fc.constantFrom('flip', 'set', 'insert', 'delete'), byte: fc.integer({ min: 0, max: 255 }) }) as fc.Arbitrary<Edit>;

function mutateBytes(b: Buffer, edits: Edit[], cut: number | null): Buffer {
  const out = [...b];
  for (const e of edits) {
    const at = out.length ? e.at % out.length : 0;
    if (e.op === 'flip') out[at] ^= 1 << (e.byte % 8);
    else if (e.op === 'set') out[at] = e.byte;
    else if (e.op === 'insert') out.splice(at, 0, e.byte);
    else out.splice(at, 1);
  }
  return Buffer.from(cut === null ? out : out.slice(0, cut % (out.length + 1)));
}

/** Every path in a JSON value, for structural mutations. */
function paths(v: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

function mutateJson(json: unknown, changes: { path: number; value: unknown }[]): Buffer {
  let doc = structuredClone(json) as unknown;
  for (const c of changes) {
    const all = paths(doc);
    const p = all[c.path % all.length];
    if (p.length === 0) doc = c.value;
    else {
      const parent = p.slice(0, -1).reduce((o: unknown, k) => (o as Record<string | number, unknown>)[k], doc) as Record<string | number, unknown>;
      parent[p[p.length - 1]] = c.value;
    }
  }
  return Buffer.from(JSON.stringify(doc) ?? 'null');
}

function check(bytes: Buffer, name: string, read: Reader = loadProfileBytes, meant: (e: unknown) => boolean = () => false): void {
  const t0 = Date.now();
  try {
    read(bytes, name);
  } catch (e) {
    if (!(e instanceof ImportError || meant(e))) throw new Error(`${name}: ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}\n${(e as Error)?.stack}`);
  }
  const ms = Date.now() - t0;
  assert.ok(ms < MAX_CASE_MS, `${name}: ${ms} ms`);
}

for (const seed of seeds) {
  test(`fuzz ${seed.name}: ${RUNS} mutated inputs load or fail with an ImportError (seed ${SEED})`, () => {
    check(seed.gzip ? gzipSync(seed.bytes) : seed.bytes, seed.name, seed.read, seed.meant);
    const byteCase = fc.record({ edits: fc.array(edit, { maxLength: 8 }), cut: fc.option(fc.nat(), { freq: 4 }) }).map(({ edits, cut }) => mutateBytes(seed.bytes, edits, cut));
    const randomCase = fc.uint8Array({ maxLength: 4096 }).map((a) => Buffer.from(a));
    const cases: fc.Arbitrary<Buffer>[] = [byteCase, byteCase, randomCase];
    if (seed.json !== undefined) {
      const change = fc.record({ path: fc.nat(), value: fc.jsonValue({ maxDepth: 3 }) });
      cases.push(fc.array(change, { minLength: 1, maxLength: 4 }).map((c) => mutateJson(seed.json, c)));
      cases.push(fc.array(change, { minLength: 1, maxLength: 4 }).map((c) => mutateJson(seed.json, c)));
    }
    const arb = fc.oneof(...cases).map((b) => (seed.gzip ? gzipSync(b) : b));
    fc.assert(
      fc.property(arb, (b) => check(b, seed.name, seed.read, seed.meant)),
      { numRuns: RUNS, seed: SEED },
    );
  });
}
