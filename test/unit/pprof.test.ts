// pprof export and import: our result → profile.proto → our result keeps stacks, counts,
// file:line, inlined frames, kinds and build-ids; an independent reader (protobufjs with the
// profile.proto schema in test/fixtures/pprof) sees the same samples, locations and mappings.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { Profile } from 'pprof-format';
import type { ProfileFrame, ProfileResult } from '../../extension/protocol/profile';
import { fromPprof, resultFromFlame, toPprof, KERNEL_MAPPING, PprofError } from '../../extension/model/pprof';
import { checkOutputFile } from '../../extension/cli/commands/profileOutput';
import fs from 'node:fs';
import os from 'node:os';
import { encodePprofGz, loadProfileBytes } from '../../extension/sys/profileFile';
import { fromProfileResult } from '../../extension/model/flamegraph/profileData';
import { fromFolded, toFolded } from '../../extension/model/flamegraph/formats';
import { repoRoot } from '../helpers';

const fr = (fn: string | null, extra: Partial<ProfileFrame> = {}): ProfileFrame => ({ address: '0x401000', module: '/usr/bin/app', function: fn, file: null, line: null, kind: 'native', ...extra });

/** A profile with kernel, native (one inlined), JIT and interpreted frames, an unnamed frame and two processes. */
function sample(): ProfileResult {
  const kern = fr('do_syscall_64', { address: '0xffffffff81a00010', module: '[kernel]', kind: 'kernel' });
  const hotA = fr('hot_a', { address: '0x401136', offset: '0x1136', file: '/src/app.c', line: 12 });
  const inl = fr('square', { address: '0x401150', offset: '0x1150', file: '/src/math.h', line: 3, inlined: true });
  const hotB = fr('hot_b', { address: '0x401150', offset: '0x1150', file: '/src/app.c', line: 18 });
  const main = fr('main', { address: '0x4011a0', offset: '0x11a0', file: '/src/app.c', line: 30 });
  const libc = fr('__libc_start_call_main', { address: '0x7f0000029d90', module: '/usr/lib/x86_64-linux-gnu/libc.so.6', offset: '0x29d90' });
  const jit = fr('void Hot.loop(long)', { address: '0x7f1000001000', module: '[jit]', kind: 'jit' });
  const interp = fr('Interpreter', { address: '0x7f1000002000', module: '[jit]', kind: 'interpreted' });
  const unknown = fr(null, { address: '0x7f2000000000', module: null });
  return {
    tracer: 'profile',
    frequency: 99,
    samples: 1000,
    lost: 3,
    buildIds: { '/usr/bin/app': 'aabbccdd', '/usr/lib/x86_64-linux-gnu/libc.so.6': '11223344', '[kernel]': 'feedface' },
    stacks: [
      { count: 600, pid: 10, tid: 10, comm: 'app', frames: [hotA, main, libc] },
      { count: 200, pid: 10, tid: 11, comm: 'app', frames: [inl, hotB, main, libc] },
      { count: 50, pid: 10, tid: 10, comm: 'app', frames: [kern, hotA, main, libc] },
      { count: 100, pid: 20, tid: 21, comm: 'java', frames: [jit, interp, unknown] },
      { count: 50, pid: 20, tid: 20, comm: 'java', frames: [interp, unknown] },
    ],
  };
}

/** Stack identity as a user sees it: names, kinds, file:line, leaf first. */
function shape(r: ProfileResult): string[] {
  return r.stacks
    .map((s) => `${s.pid}/${s.tid}/${s.comm} ${s.count}: ${s.frames.map((f) => `${f.function ?? '?'}<${f.kind}>${f.file ? `@${f.file}:${f.line}` : ''}${f.inlined ? '+inl' : ''}`).join(' | ')}`)
    .sort();
}

describe('pprof round trip', () => {
  test("the Java agent's frame types survive: [java:<type>] mappings, inlined Java frames as lines of their caller's location", () => {
    const j = (fn: string, javaType?: ProfileFrame['javaType'], extra: Partial<ProfileFrame> = {}): ProfileFrame => {
      const f: ProfileFrame = { address: '0x0', module: '[java]', function: fn, file: 'Work.java', line: 3, kind: javaType === 'interpreted' ? 'interpreted' : 'jit', ...extra };
      if (javaType) f.javaType = javaType;
      if (javaType === 'inlined') f.inlined = true;
      return f;
    };
    const r: ProfileResult = {
      tracer: 'profile',
      frequency: 99,
      samples: 9,
      lost: 0,
      stacks: [
        { count: 5, pid: 1, tid: 1, comm: 'java', frames: [j('Work.step', 'inlined'), j('Work.hot', 'inlined'), j('Work.run', 'c2'), j('Work.main', 'interpreted')] },
        { count: 3, pid: 1, tid: 1, comm: 'java', frames: [j('Work.hot', 'c1'), j('Work.run', 'compiled'), j('Work.main')] },
        { count: 1, pid: 1, tid: 1, comm: 'java', frames: [j('Work.hot', 'interpreted')] },
      ],
    };
    const back = fromPprof(toPprof(r));
    const types = (x: ProfileResult) => x.stacks.map((s) => `${s.count}: ${s.frames.map((f) => `${f.function}<${f.kind}/${f.javaType ?? '-'}${f.inlined ? '+inl' : ''}>@${f.module}`).join(' | ')}`).sort();
    assert.deepEqual(types(back), types(r));
    const raw = Profile.decode(toPprof(r));
    const withLines = raw.location.filter((l) => l.line.length === 3);
    assert.equal(withLines.length, 1, 'step and hot are extra lines of run\'s location');
  });

  test('stacks, counts, pids, file:line, inlined frames and kinds survive', () => {
    const r = sample();
    const back = fromPprof(toPprof(r));
    assert.deepEqual(shape(back), shape(r));
    assert.equal(back.frequency, 99);
    assert.equal(back.samples, 1000);
    assert.equal(back.lost, 3);
    assert.deepEqual(back.buildIds, r.buildIds);
    // Addresses and modules too (the kernel's module name is ours again).
    const k = back.stacks.flatMap((s) => s.frames).find((f) => f.function === 'do_syscall_64')!;
    assert.equal(k.address, '0xffffffff81a00010');
    assert.equal(k.module, '[kernel]');
    const libc = back.stacks.flatMap((s) => s.frames).find((f) => f.function === '__libc_start_call_main')!;
    assert.equal(libc.module, '/usr/lib/x86_64-linux-gnu/libc.so.6');
  });

  test('the flame graph of the imported file equals that of the original', () => {
    const r = sample();
    const viaFile = loadProfileBytes(encodePprofGz(r), 'x.pb.gz');
    assert.equal(viaFile.format, 'pprof');
    const lines = (t: string) => t.trim().split('\n').sort();
    assert.deepEqual(lines(toFolded(viaFile.flame)), lines(toFolded(fromProfileResult(r, { name: 'x' }))));
    const hotB = viaFile.flame.frames.find((f) => f.name === 'hot_b')!;
    assert.equal(`${hotB.file}:${hotB.line}`, '/src/app.c:18');
  });

  test('other formats still load by content, whatever the name', () => {
    assert.equal(loadProfileBytes(Buffer.from('main;work 5\n'), 'a.pb.gz').format, 'folded');
    const json = JSON.stringify(sample());
    const j = loadProfileBytes(Buffer.from(json), 'p.json');
    assert.equal(j.format, 'json');
    assert.equal(j.flame.total, 1000);
  });

  test('an imported folded profile exports to pprof and back unchanged (kinds and weights)', () => {
    const folded = 'main;work;leaf 7\nmain;work;sys_read_[k] 3\nmain;Hot.loop_[j];Interpreter_[0] 2\nmain;Work.run_[1];Work.step_[i] 4\n';
    const back = loadProfileBytes(encodePprofGz(resultFromFlame(fromFolded(folded))), 'f.pb.gz');
    assert.deepEqual(toFolded(back.flame).trim().split('\n').sort(), folded.trim().split('\n').sort());
  });

  test('--pprof FILE is checked before sampling', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pprof-out-'));
    assert.equal(checkOutputFile(path.join(dir, 'a.pb.gz'), '--pprof'), path.join(dir, 'a.pb.gz'));
    assert.throws(() => checkOutputFile(path.join(dir, 'no/such/a.pb.gz'), '--pprof'), /the folder .* does not exist; create it or choose another path/);
    assert.throws(() => checkOutputFile(dir, '--pprof'), /is a folder: give a file name/);
    fs.rmSync(dir, { recursive: true });
  });

  test('bad files get a reason', () => {
    assert.throws(() => loadProfileBytes(Buffer.from([0x1f, 0x8b, 1, 2, 3]), 'x'), /gzip-compressed but does not decompress/);
    assert.throws(() => loadProfileBytes(Buffer.alloc(0), 'x'), /empty/);
    assert.throws(() => fromPprof(Uint8Array.from([0xff, 0xff, 0xff])), PprofError);
    assert.throws(() => fromPprof(Uint8Array.from([])), /no sample types/);
  });
});

describe('pprof read by an independent reader (protobufjs + profile.proto)', () => {
  const root = protobuf.loadSync(path.join(repoRoot, 'test/fixtures/pprof/profile.proto'));
  const Profile = root.lookupType('perftools.profiles.Profile');

  interface Decoded {
    sampleType: { type: number; unit: number }[];
    sample: { locationId: number[]; value: number[]; label: { key: number; str?: number; num?: number }[] }[];
    mapping: { id: number; memoryStart: number; memoryLimit: number; fileOffset: number; filename: number; buildId: number; hasFunctions: boolean; hasInlineFrames: boolean }[];
    location: { id: number; mappingId: number; address: string; line: { functionId: number; line: number }[] }[];
    function: { id: number; name: number; filename: number }[];
    stringTable: string[];
    periodType: { type: number; unit: number };
    period: number;
  }
  const decode = (r: ProfileResult): Decoded => {
    const msg = Profile.decode(gunzipSync(encodePprofGz(r)));
    return Profile.toObject(msg, { longs: String, defaults: true }) as unknown as Decoded;
  };

  test('sample types, period, samples and their stacks', () => {
    const d = decode(sample());
    const s = (i: number | string) => d.stringTable[Number(i)];
    assert.equal(d.stringTable[0], '', 'string 0 is the empty string');
    assert.deepEqual(
      d.sampleType.map((t) => `${s(t.type)}/${s(t.unit)}`),
      ['samples/count', 'cpu/nanoseconds'],
    );
    assert.equal(`${s(d.periodType.type)}/${s(d.periodType.unit)}`, 'cpu/nanoseconds');
    assert.equal(Number(d.period), Math.round(1e9 / 99));
    assert.equal(d.sample.length, 5);
    assert.equal(
      d.sample.reduce((n, x) => n + Number(x.value[0]), 0),
      1000,
    );
    for (const x of d.sample) assert.equal(Number(x.value[1]), Number(x.value[0]) * Math.round(1e9 / 99));
    // Every id a sample or line names exists.
    const locs = new Map(d.location.map((l) => [String(l.id), l]));
    const fns = new Map(d.function.map((f) => [String(f.id), f]));
    const maps = new Map(d.mapping.map((m) => [String(m.id), m]));
    const names = (x: Decoded['sample'][number]) =>
      x.locationId.flatMap((id) => {
        const l = locs.get(String(id));
        assert.ok(l, `location ${id} exists`);
        if (Number(l.mappingId)) assert.ok(maps.has(String(l.mappingId)), `mapping ${l.mappingId} exists`);
        return l.line.map((ln) => s(fns.get(String(ln.functionId))!.name));
      });
    const hot = d.sample.find((x) => Number(x.value[0]) === 200)!;
    // The inlined function and its caller share one location: lines innermost first.
    assert.deepEqual(names(hot), ['square', 'hot_b', 'main', '__libc_start_call_main']);
    assert.equal(locs.get(String(hot.locationId[0]))!.line.length, 2);
    const pidLabel = hot.label.find((l) => s(l.key) === 'pid')!;
    assert.equal(Number(pidLabel.num), 10);
    assert.equal(s(hot.label.find((l) => s(l.key) === 'comm')!.str!), 'app');
  });

  test('mappings: kernel and per-process modules with build-ids and exact file offsets', () => {
    const d = decode(sample());
    const s = (i: number | string) => d.stringTable[Number(i)];
    const byName = new Map(d.mapping.map((m) => [s(m.filename), m]));
    assert.equal(s(byName.get(KERNEL_MAPPING)!.buildId), 'feedface');
    const app = byName.get('/usr/bin/app')!;
    assert.equal(s(app.buildId), 'aabbccdd');
    assert.equal(app.hasFunctions, true);
    assert.equal(app.hasInlineFrames, true);
    // Any address of the mapping converts to its frame's file offset.
    const start = BigInt(app.memoryStart);
    assert.equal(start, 0x401136n);
    assert.equal(BigInt(app.fileOffset), 0x1136n);
    assert.ok(BigInt(app.memoryLimit) > 0x4011a0n);
    const libc = byName.get('/usr/lib/x86_64-linux-gnu/libc.so.6')!;
    assert.equal(s(libc.buildId), '11223344');
    assert.equal(BigInt(libc.fileOffset), 0x29d90n);
    const jit = byName.get('[jit]')!;
    assert.equal(jit.hasFunctions, true);
    const fnFile = d.function.find((f) => s(f.name) === 'hot_a')!;
    assert.equal(s(fnFile.filename), '/src/app.c');
    const line = d.location.flatMap((l) => l.line).find((ln) => s(d.function.find((f) => String(f.id) === String(ln.functionId))!.name) === 'hot_a')!;
    assert.equal(Number(line.line), 12);
  });
});
