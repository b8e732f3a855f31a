// The Java agent path without a JVM or a kernel: the agent's text records, the BPF join record
// (mirrors bpf/profile.h struct profile_java_sample), pairing by tid and time, joining BPF and
// Java frames, AGCT failure codes as labelled frames, and the editor picker's default.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agctLabel, ALL_IN, decodeJavaSample, emptyAgentLog, foldStacks, IncrementalPairer, JAVA_SAMPLE_SIZE, javaSourcePath, joinStack, NOT_JAVA_THREAD, pairSamples, parseAgentText, type AgentRecord, type BpfJavaSample } from '../../extension/tracers/javaAgent/decode';
import { unwindDetails, unwindSummary } from '../../extension/model/unwindText';
import { profileTracer } from '../../extension/tracers/profile/tracer';
import { installVscodeMock } from '../mocks/vscode';
import type { ProfileFrame } from '../../extension/protocol/profile';

installVscodeMock();
 
const { javaModeItems } = require('../../extension/editor/features/profile/profileJavaMode') as typeof import('../../extension/editor/features/profile/profileJavaMode');

const AGENT_TEXT = [
  'A\t42\t1000',
  'M\t1\tcom.acme.Work\tmix\tWork.java\t0',
  'M\t2\tcom.acme.Work\theavy\tWork.java\t0',
  'M\t3\tjava.util.zip.Deflater\tdeflateBytesBytes\tDeflater.java\t1',
  'S\t7\t2000\t2\t1:5:14\t2:3:21',
  'S\t8\t2100\t-2',
  'S\t7\t3000\t2\t3:-3:-1\t2:3:21',
  'E\t0\t3\t4500',
  'S\t9\t40', // partial line: kept as the tail
].join('\n');

test('parseAgentText reads methods, samples, failure codes and the end mark, keeping a partial line', () => {
  const log = emptyAgentLog();
  const tail = parseAgentText(AGENT_TEXT, log);
  assert.equal(tail, 'S\t9\t40');
  assert.equal(log.agentPid, 42);
  assert.equal(log.methods.size, 3);
  assert.deepEqual(log.methods.get(3), { className: 'java.util.zip.Deflater', method: 'deflateBytesBytes', sourceFile: 'Deflater.java', native: true });
  assert.equal(log.records.length, 3);
  assert.deepEqual(log.records[0], { tid: 7, tsNs: 2000n, code: 2, frames: [{ method: 1, bci: 5, line: 14 }, { method: 2, bci: 3, line: 21 }] });
  assert.equal(log.records[1].code, -2);
  assert.equal(log.ended, true);
  assert.equal(log.signals, 3);
  assert.equal(log.handlerNs, 4500);
});

test('decodeJavaSample mirrors struct profile_java_sample (24 bytes)', () => {
  const b = Buffer.alloc(JAVA_SAMPLE_SIZE);
  b.writeUInt32LE(1234, 0);
  b.writeInt32LE(5, 4);
  b.writeInt32LE(-14, 8);
  b.writeUInt32LE(7, 12);
  b.writeBigUInt64LE(987654321012n, 16);
  assert.deepEqual(decodeJavaSample(b), { tid: 1234, nsTid: 7, userStackId: 5, kernStackId: -14, ktimeNs: 987654321012n });
  assert.throws(() => decodeJavaSample(Buffer.alloc(8)));
});

test('pairSamples: same tid, first record at or after the sample and before the next one of that thread', () => {
  const s = (tid: number, t: bigint): BpfJavaSample => ({ tid, userStackId: 1, kernStackId: -14, ktimeNs: t });
  const r = (tid: number, t: bigint): AgentRecord => ({ tid, tsNs: t, code: 1, frames: [] });
  const samples = [s(1, 100n), s(1, 200n), s(2, 150n), s(1, 300n), s(3, 10n)];
  const records = [r(1, 105n), r(2, 90n) /* before its sample: not its record */, r(2, 160n), r(1, 320n), r(1, 330n), r(3, 10n + 2_000_000_000n) /* too late */];
  const p = pairSamples(samples, records);
  assert.equal(p[0]?.tsNs, 105n);
  assert.equal(p[1], undefined, 'no record between 200 and 300: the signal was coalesced or lost');
  assert.equal(p[2]?.tsNs, 160n);
  assert.equal(p[3]?.tsNs, 320n);
  assert.equal(p[4], undefined);
});

test('pairSamples: in a container the agent records namespace tids; samples join on their nsTid, unknown (0) falls back to the host tid', () => {
  const s = (tid: number, nsTid: number, t: bigint): BpfJavaSample => ({ tid, nsTid, userStackId: 1, kernStackId: -14, ktimeNs: t });
  const r = (tid: number, t: bigint): AgentRecord => ({ tid, tsNs: t, code: 1, frames: [] });
  // host tids 5001/5002 are 7/8 inside the JVM's pid namespace; a sample of host tid 9 has no nsTid
  const samples = [s(5001, 7, 100n), s(5002, 8, 150n), s(9, 0, 300n)];
  const p = pairSamples(samples, [r(7, 110n), r(8, 160n), r(9, 305n), r(5001, 120n)]);
  assert.equal(p[0]?.tsNs, 110n, 'host tid 5001 joins the record of ns tid 7');
  assert.equal(p[1]?.tsNs, 160n);
  assert.equal(p[2]?.tsNs, 305n, 'nsTid 0: joined on the host tid');
});

const kernel: ProfileFrame = { address: '0xffffffff81000000', module: '[kernel]', function: 'do_syscall_64', file: null, line: null, kind: 'kernel' };
const libz: ProfileFrame = { address: '0x7f0000001000', module: '/usr/lib/libz.so.1', function: 'deflate_slow', file: null, line: null, kind: 'native' };
const jit: ProfileFrame = { address: '0x7f0001000000', module: '[perf-map]', function: 'com.acme.Work::mix', file: null, line: null, kind: 'jit' };
const junk: ProfileFrame = { address: '0x1234', module: null, function: null, file: null, line: null, kind: 'native' };
const libc: ProfileFrame = { address: '0x7f0000002000', module: '/usr/lib/libc.so.6', function: 'memcpy', file: null, line: null, kind: 'native' };

test('joinStack: kernel and native frames down to the first Java/unknown frame, then the Java frames with file:line', () => {
  const log = emptyAgentLog();
  parseAgentText(AGENT_TEXT, log);
  const jniStack = joinStack([kernel, libz, junk, libc], log.records[2], log.methods);
  assert.deepEqual(jniStack.map((f) => f.function), ['do_syscall_64', 'deflate_slow', 'java.util.zip.Deflater.deflateBytesBytes', 'com.acme.Work.heavy']);
  assert.equal(jniStack[2].kind, 'native', 'a JNI method is a native frame');
  assert.equal(jniStack[2].line, null);
  assert.equal(jniStack[3].file, 'com/acme/Work.java');
  assert.equal(jniStack[3].line, 21);
  const jitStack = joinStack([jit, junk], log.records[0], log.methods);
  assert.deepEqual(jitStack.map((f) => [f.function, f.line, f.kind]), [
    ['com.acme.Work.mix', 14, 'jit'],
    ['com.acme.Work.heavy', 21, 'jit'],
  ]);
});

test('joinStack never drops a sample: AGCT failures and missing records become labelled root frames', () => {
  const log = emptyAgentLog();
  parseAgentText(AGENT_TEXT, log);
  const gc = joinStack([kernel, libc], log.records[1], log.methods);
  assert.equal(gc.length, 3);
  assert.equal(gc[2].function, '[Java stack not walked: GC active]');
  assert.equal(agctLabel(-99), '[Java stack not walked: AsyncGetCallTrace code -99]');
  assert.match(joinStack([libc], undefined, log.methods).at(-1)!.function!, /no agent record/);
  const vmThread: AgentRecord = { tid: 1, tsNs: 1n, code: NOT_JAVA_THREAD, frames: [] };
  assert.deepEqual(joinStack([libc], vmThread, log.methods), [libc], 'a non-Java thread keeps its native stack as it is');
});

test('parseAgentText keeps the latest T watermark', () => {
  const log = emptyAgentLog();
  parseAgentText('T\t5000\nS\t7\t4000\t0\nT\t9000\nT\t8000\n', log);
  assert.equal(log.watermarkNs, 9000n);
  assert.equal(log.records.length, 1);
});

/** A small deterministic PRNG (mulberry32), so a failure is reproducible. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('IncrementalPairer: samples and records arriving in any order, decided step by step, pair exactly as pairSamples over everything', () => {
  const maxDelay = 1000n;
  for (let seed = 1; seed <= 300; seed++) {
    const rand = rng(seed);
    const samples: BpfJavaSample[] = [];
    const records: AgentRecord[] = [];
    for (let tid = 1; tid <= 3; tid++) {
      let t = BigInt(Math.floor(rand() * 100));
      for (let i = 0; i < 25; i++) {
        t += BigInt(1 + Math.floor(rand() * 400));
        samples.push({ tid, userStackId: i, kernStackId: -14, ktimeNs: t });
        const x = rand();
        // mostly a record shortly after; sometimes none, a late one (after the next sample or
        // beyond maxDelay), or a stray one before the sample
        if (x < 0.7) records.push({ tid, tsNs: t + BigInt(Math.floor(rand() * 30)), code: 1, frames: [] });
        else if (x < 0.8) records.push({ tid, tsNs: t + BigInt(200 + Math.floor(rand() * 1500)), code: 2, frames: [] });
        else if (x < 0.9) records.push({ tid, tsNs: t - BigInt(1 + Math.floor(rand() * 50)), code: 3, frames: [] });
      }
    }
    // one record per thread and nanosecond (real records of a thread are microseconds apart)
    const seen = new Set<string>();
    records.splice(0, records.length, ...records.filter((r) => !seen.has(`${r.tid}/${r.tsNs}`) && seen.add(`${r.tid}/${r.tsNs}`)));
    const expected = pairSamples(samples, records, maxDelay);
    // Arrival: samples in time order give or take a little skew, records later and shuffled
    // within a drain; watermarks trail what has arrived.
    type Ev = { at: number; s?: BpfJavaSample; r?: AgentRecord };
    const events: Ev[] = [
      ...samples.map((s) => ({ at: Number(s.ktimeNs) + Math.floor(rand() * 20), s })),
      ...records.map((r) => ({ at: Number(r.tsNs) + 20 + Math.floor(rand() * 200), r })),
    ].sort((a, b) => a.at - b.at);
    const pairer = new IncrementalPairer<BpfJavaSample>(maxDelay);
    const got = new Map<BpfJavaSample, AgentRecord | undefined>();
    let maxSample = 0n;
    let step = 0;
    for (const ev of events) {
      if (ev.s) {
        pairer.addSample(ev.s);
        if (ev.s.ktimeNs > maxSample) maxSample = ev.s.ktimeNs;
      } else pairer.addRecord(ev.r!);
      if (++step % 7 === 0) {
        // every record stamped before at - 220 and every sample before the latest - 20 is in
        for (const d of pairer.advance(maxSample - 20n, BigInt(ev.at - 220))) {
          assert.ok(!got.has(d.sample), 'a sample is decided once');
          got.set(d.sample, d.record);
        }
      }
    }
    const beforeEnd = got.size;
    for (const d of pairer.advance(ALL_IN, ALL_IN)) got.set(d.sample, d.record);
    assert.equal(pairer.pending, 0);
    assert.equal(got.size, samples.length);
    samples.forEach((s, i) => assert.equal(got.get(s), expected[i], `seed ${seed}: sample ${s.tid}@${s.ktimeNs}`));
    assert.ok(beforeEnd >= 0.5 * samples.length, `seed ${seed}: only ${beforeEnd} of ${samples.length} decided before the end`);
  }
});

test('IncrementalPairer keeps a sample pending while its record may still come', () => {
  const p = new IncrementalPairer<BpfJavaSample>(1000n);
  const s = { tid: 1, userStackId: 0, kernStackId: 0, ktimeNs: 100n };
  p.addSample(s);
  assert.deepEqual(p.advance(200n, 90n), [], 'records known only up to 90: the record of the sample at 100 may come');
  assert.equal(p.pending, 1);
  const r: AgentRecord = { tid: 1, tsNs: 110n, code: 1, frames: [] };
  p.addRecord(r);
  assert.deepEqual(p.advance(105n, 200n), [], 'a sample of the thread at 105..110 may be unseen: r may be its record');
  assert.deepEqual(p.advance(200n, 200n), [{ sample: s, record: r }]);
  const late = { tid: 1, userStackId: 0, kernStackId: 0, ktimeNs: 300n };
  p.addSample(late);
  assert.deepEqual(p.advance(400n, 1301n), [{ sample: late, record: undefined }], 'no record within the delay: decided without one');
});

test('unwindSummary says where Java frames come from for a JVM profiled with the agent', () => {
  assert.match(unwindSummary({ mode: 'dwarf', javaAgent: true })!, /^stacks: CFI .*Java by the JVMTI agent/);
  assert.doesNotMatch(unwindSummary({ mode: 'dwarf', javaAgent: true })!, /perf map/);
  assert.match(unwindDetails({ mode: 'dwarf', javaAgent: true })!, /unwound by CFI[\s\S]*Java frames from the JVMTI agent/);
  assert.match(unwindDetails({ mode: 'fp', javaAgent: true })!, /Java frames from the JVMTI agent/);
});

test('foldStacks counts identical joined stacks once', () => {
  const a = { pid: 1, tid: 2, comm: 'java', frames: [libc] };
  const folded = foldStacks([a, a, { ...a, tid: 3 }, { ...a, count: 5 }]);
  assert.deepEqual(folded.map((s) => [s.tid, s.count]), [[2, 7], [3, 1]]);
});

test('javaSourcePath puts the source file under its package folder', () => {
  assert.equal(javaSourcePath('com.acme.Work$Inner', 'Work.java'), 'com/acme/Work.java');
  assert.equal(javaSourcePath('Top', 'Top.java'), 'Top.java');
  assert.equal(javaSourcePath('Gen$$Lambda$1', null), null);
});

test('profile validation: java defaults to auto and accepts only agent, perfmap, auto', () => {
  assert.equal(profileTracer.validate({ pid: 1 }).java, 'auto');
  assert.equal(profileTracer.validate({ pid: 1, java: 'agent' }).java, 'agent');
  assert.throws(() => profileTracer.validate({ pid: 1, java: 'jfr' }), /java/);
});

test('the editor offers the agent first for a JVM without -XX:+PreserveFramePointer, the perf map first with it', () => {
  assert.equal(javaModeItems(false)[0].mode, 'agent');
  assert.equal(javaModeItems(false)[0].label, 'Java: full stacks (agent)');
  assert.equal(javaModeItems(true)[0].mode, 'perfmap');
  assert.equal(javaModeItems(true).length, 2);
});

test('IncrementalPairer: in a container samples join on their namespace tid (what the agent records), unknown (0) on the host tid', () => {
  const pairer = new IncrementalPairer<BpfJavaSample>();
  const s = (tid: number, nsTid: number, t: bigint): BpfJavaSample => ({ tid, nsTid, userStackId: 1, kernStackId: -14, ktimeNs: t });
  const rec = (tid: number, tsNs: bigint): AgentRecord => ({ tid, tsNs, code: 1, frames: [] });
  // host tids 5001/5002 are 7/8 inside the JVM's pid namespace; host tid 9 has no nsTid
  pairer.addSample(s(5001, 7, 100n));
  pairer.addSample(s(5002, 8, 200n));
  pairer.addSample(s(9, 0, 300n));
  pairer.addRecord(rec(7, 101n));
  pairer.addRecord(rec(8, 202n));
  pairer.addRecord(rec(9, 305n));
  pairer.addRecord(rec(5001, 102n)); // a host tid in the agent's file matches nothing of 5001
  const out = pairer.advance(ALL_IN, ALL_IN);
  const by = new Map(out.map((o) => [o.sample.tid, o.record?.tsNs]));
  assert.deepEqual([by.get(5001), by.get(5002), by.get(9)], [101n, 202n, 305n]);
  assert.equal(pairer.pending, 0);
});
