// The Java heap tracer's pure half: class names from JVM signatures, the agent's records turned
// into estimates (a simulated exponential byte sampler, as HotSpot's, against the known truth),
// live = survived a GC, leak evidence, the JDK version check, and the allocation profile's
// --json / folded / pprof shapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Profile } from 'pprof-format';
import { JavaHeapModel, javaClassName, leakEvidence } from '../../extension/tracers/javaHeap/decode';
import { jdkFeature } from '../../extension/tracers/javaHeap/tracer';
import { allocFolded, liveSiteText, toAllocProfile } from '../../extension/model/javaHeapReport';
import { toAllocPprof } from '../../extension/model/allocPprof';
import type { JavaHeapResult } from '../../extension/protocol/javaHeap';

test('class names: primitive and object arrays, nested classes', () => {
  assert.equal(javaClassName('[B'), 'byte[]');
  assert.equal(javaClassName('[[Ljava/lang/String;'), 'java.lang.String[][]');
  assert.equal(javaClassName('Ljava/util/HashMap$Node;'), 'java.util.HashMap$Node');
  assert.equal(javaClassName('[J'), 'long[]');
});

test('JDK versions: the feature release decides heap sampling (11+)', () => {
  assert.equal(jdkFeature('1.8.0_392'), 8);
  assert.equal(jdkFeature('11.0.21'), 11);
  assert.equal(jdkFeature('17.0.9'), 17);
  assert.equal(jdkFeature('25'), 25);
  assert.equal(jdkFeature('21-ea'), 21);
});

/** A seeded generator (mulberry32) so the simulated sampler is reproducible. */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const header = 'H\t42\t1000000000\t65536\t0\nM\t1\tcom.x.Churn\trun\tChurn.java\t0\nM\t2\tcom.x.Leak\tkeep\tLeak.java\t0\n';

test('weighted samples are unbiased estimates of bytes per site, with honest standard errors', () => {
  const interval = 65536;
  const rand = rng(7);
  const m = new JavaHeapModel(interval);
  m.feed(header);
  // an exponential gap between sampled bytes, as HotSpot draws it; the object crossing the point is sampled
  let until = -Math.log(1 - rand()) * interval;
  let id = 0;
  const truth = { small: 0, big: 0 };
  const lines: string[] = [];
  for (let i = 0; i < 400_000; i++) {
    const big = i % 10 === 0;
    const size = big ? 40_016 : 48;
    truth[big ? 'big' : 'small'] += size;
    until -= size;
    if (until > 0) continue;
    while (until <= 0) until += -Math.log(1 - rand()) * interval;
    lines.push(`O\t${++id}\t${1_000_000_000 + i}\t7\t${size}\t0\t${big ? '[B' : 'Ljava/lang/Object;'}\t${big ? '2:4:20' : '1:3:10'}\n`);
  }
  m.feed(lines.join(''));
  const sites = m.allocatedStacks();
  for (const [cls, want] of [
    ['byte[]', truth.big],
    ['java.lang.Object', truth.small],
  ] as const) {
    const s = sites.find((x) => x.class === cls)!;
    assert.ok(Math.abs(s.bytes - want) <= 4 * s.bytesStdErr, `${cls}: ${s.bytes} ± ${s.bytesStdErr} vs ${want}`);
    assert.ok(s.bytesStdErr < 0.1 * want, `${cls}: a useful standard error (${s.bytesStdErr} of ${want})`);
  }
  assert.equal(sites[0].frames[0].function, 'com.x.Leak.keep');
  assert.equal(sites[0].frames[0].file, 'com/x/Leak.java');
  assert.equal(sites[0].frames[0].line, 20);
});

test('live means survived a GC; freed objects leave; a site growing across GCs is a leak candidate', () => {
  const m = new JavaHeapModel(65536);
  m.feed(header);
  let id = 0;
  let t = 1_000_000_000;
  const text: string[] = [];
  for (let gc = 0; gc < 8; gc++) {
    const churn: number[] = [];
    for (let k = 0; k < 10; k++) {
      text.push(`O\t${++id}\t${(t += 1e6)}\t7\t65536\t${gc}\t[B\t1:3:10\n`);
      churn.push(id);
    }
    text.push(`O\t${++id}\t${(t += 1e6)}\t7\t65536\t${gc}\t[J\t2:4:20\n`); // the leak keeps one per GC
    for (const c of churn) text.push(`F\t${c}\t${gc + 1}\n`); // all churn dies at the next GC
    text.push(`G\t${gc + 1}\t${(t += 1e8)}\t${gc + 1}\n`);
  }
  text.push(`O\t${++id}\t${(t += 1e6)}\t7\t65536\t8\t[B\t1:3:10\n`); // no GC has judged this one yet
  m.feed(text.join(''));
  const live = m.liveStacks(BigInt(t));
  assert.equal(live.length, 1, 'churn is gone after its GC, and the unjudged object is not live yet');
  const leak = live[0];
  assert.equal(leak.class, 'long[]');
  assert.equal(leak.survivedGcs, 8);
  const w = 65536 / -Math.expm1(-1);
  assert.ok(Math.abs(leak.bytes - 8 * w) < 1, `8 objects of weight ${w}: ${leak.bytes}`);
  assert.equal(leak.leakCandidate, true, leak.evidence);
  assert.ok(leak.growthBytesPerSecond > 0);
  assert.match(liveSiteText(leak), /^≈ .* live in 13 long\[\] · survived 8 GCs · \+.*\/s$/);
});

test('leak evidence: flat or shrinking live bytes are no leak, steady growth with old objects is', () => {
  const flat = Array.from({ length: 10 }, (_, i) => [i * 1000, 5e6 + (i % 2 ? 1e5 : -1e5)] as [number, number]);
  assert.equal(leakEvidence(flat, 5, 1e5).candidate, false);
  const grow = Array.from({ length: 10 }, (_, i) => [i * 1000, 1e6 * (i + 1)] as [number, number]);
  const g = leakEvidence(grow, 9, 2e5);
  assert.equal(g.candidate, true);
  assert.ok(Math.abs(g.slope - 1e6) < 1, `slope ${g.slope}`);
  assert.equal(leakEvidence(grow, 1, 2e5).candidate, false, 'objects that survived one GC only are not yet evidence');
});

test('allocation profile: bytes as value with unit, class as leaf; folded by bytes; pprof alloc_objects/alloc_space', () => {
  const r: JavaHeapResult = {
    tracer: 'java-heap', pid: 9, sampleBytes: 524288, stacks: [], samples: 3, gcs: 0, durationMs: 1000, dropped: 0, untracked: 0, lost: 0, agentCallbackNs: 0,
    allocated: [
      { class: 'byte[]', frames: [{ address: '0x0', module: '[java]', function: 'A.f', file: 'A.java', line: 3 }, { address: '0x0', module: '[java]', function: 'A.main', file: 'A.java', line: 9 }], bytes: 3_000_000, objects: 300, bytesStdErr: 1, samples: 2 },
      { class: 'int[]', frames: [{ address: '0x0', module: '[java]', function: 'A.main', file: 'A.java', line: 8 }], bytes: 1_000_000, objects: 10, bytesStdErr: 1, samples: 1 },
    ],
  };
  const p = toAllocProfile(r, 'java');
  assert.equal(p.unit, 'bytes');
  assert.equal(p.stacks[0].value, 3_000_000);
  assert.equal(p.stacks[0].count, 300);
  assert.equal(p.stacks[0].frames[0].function, 'byte[]');
  assert.equal(allocFolded(p), 'A.main;A.f;byte[] 3000000\nA.main;int[] 1000000');
  const prof = Profile.decode(toAllocPprof(p, 524288));
  const str = (i: number | bigint) => prof.stringTable.strings[Number(i)];
  assert.deepEqual(prof.sampleType.map((v) => `${str(v.type)}/${str(v.unit)}`), ['alloc_objects/count', 'alloc_space/bytes']);
  assert.deepEqual(prof.sample.map((s) => s.value.map(Number)), [[300, 3_000_000], [10, 1_000_000]]);
  assert.equal(Number(prof.period), 524288);
});

test('Java leak lenses: the first frame found in the workspace, lines summed, the leak marked', async () => {
  const { javaLeakLenses } = await import('../../extension/model/javaHeapReport');
  const frame = (fn: string, file: string, line: number) => ({ address: '0x0', module: '[java]', function: fn, file, line });
  const base = { bytesStdErr: 0, allocationsStdErr: 0, oldestAgeMs: 1, allocatedBytes: 0, allocatedObjects: 0, allocatedBytesStdErr: 0 };
  const stacks = [
    { ...base, bytes: 48e6, allocations: 12_000, class: 'byte[]', survivedGcs: 9, growthBytesPerSecond: 2.1e6, leakCandidate: true, frames: [frame('java.util.ArrayList.grow', 'java/util/ArrayList.java', 237), frame('com.x.Cache.put', 'com/x/Cache.java', 40)] },
    { ...base, bytes: 1e6, allocations: 10, class: 'byte[]', survivedGcs: 2, growthBytesPerSecond: 0, leakCandidate: false, frames: [frame('com.x.Cache.put', 'com/x/Cache.java', 40)] },
    { ...base, bytes: 5e5, allocations: 1, class: 'int[]', survivedGcs: 1, growthBytesPerSecond: 0, leakCandidate: false, frames: [frame('org.lib.X.y', 'org/lib/X.java', 3)] },
  ];
  const lenses = javaLeakLenses(stacks, (rel) => (rel.startsWith('com/') ? `/ws/src/main/java/${rel}` : undefined));
  assert.equal(lenses.length, 1, 'JDK and library frames are skipped (not in the workspace)');
  assert.equal(lenses[0].file, '/ws/src/main/java/com/x/Cache.java');
  assert.equal(lenses[0].line, 40);
  assert.deepEqual(lenses[0].stacks, [0, 1]);
  assert.equal(lenses[0].text, '⚠ ≈ 49 MB live in 12 k byte[] · survived 9 GCs · +2.1 MB/s');
});

test('CLI dispatch: --event alloc goes to the heap sampler; memleak --pid goes to Java only for a JVM without --native', async () => {
  const { wantsAllocEvent, javaLeakTarget } = await import('../../extension/cli/commands/javaHeap');
  assert.equal(wantsAllocEvent(['--pid', '1', '--event', 'alloc']), true);
  assert.equal(wantsAllocEvent(['--pid', '1', '--event=alloc']), true);
  assert.equal(wantsAllocEvent(['--pid', '1']), false);
  assert.equal(javaLeakTarget(['--pid', String(process.pid)]), undefined, 'node is not a JVM: native memleak');
  assert.equal(javaLeakTarget(['--pid', String(process.pid), '--native']), undefined);
  assert.equal(javaLeakTarget(['--', 'java', '-version']), undefined, 'a launched command stays native');
});
