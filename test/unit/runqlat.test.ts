// The runqlat tracer's user-space half without a kernel: the map decoder (bpf/hist_tracer.bpf.h), the
// per-interval aggregation, the kernel-side slot math (bpf/log2.bpf.h compiled for the host)
// against log2hist.ts, the stats and the CLI's text layout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bucketIndex, fromBuckets, toBuckets } from '../../extension/model/log2hist';
import { statsOf } from '../../extension/model/log2hist';
import { decodeHistEntries, HistAggregate, HIST_VALUE_SIZE as RUNQLAT_HIST_SIZE, HIST_KEY_SIZE as RUNQLAT_KEY_SIZE, HIST_MAX_SLOTS as RUNQLAT_MAX_SLOTS } from '../../extension/tracers/histDecode';
import { runqlatTracer } from '../../extension/tracers/runqlat/tracer';
import { formatHistograms } from '../../extension/cli/histCommand';
import { StudioError } from '../../extension/protocol/errors';
import { repoRoot } from '../helpers';

/** Builds a map dump the way the addon returns it: keys and values back to back. */
function dump(entries: { key: number; epoch: number; slots: Record<number, number>; comm: string }[]) {
  const keys = Buffer.alloc(entries.length * RUNQLAT_KEY_SIZE);
  const values = Buffer.alloc(entries.length * RUNQLAT_HIST_SIZE);
  entries.forEach((e, i) => {
    keys.writeUInt32LE(e.key >>> 0, i * RUNQLAT_KEY_SIZE);
    keys.writeUInt32LE(e.epoch, i * RUNQLAT_KEY_SIZE + 4);
    const v = i * RUNQLAT_HIST_SIZE;
    for (const [s, c] of Object.entries(e.slots)) values.writeBigUInt64LE(BigInt(c), v + Number(s) * 8);
    values.write(e.comm, v + 256, 'utf8');
  });
  return { keys, values, count: entries.length };
}

test('decoder reads key, epoch, 32 u64 slots and comm at the offsets of bpf/hist_tracer.bpf.h', () => {
  const header = fs.readFileSync(path.join(repoRoot, 'bpf/hist_tracer.bpf.h'), 'utf8');
  assert.match(header, new RegExp(`#define HIST_MAX_SLOTS ${RUNQLAT_MAX_SLOTS}\\b`));
  assert.match(header, new RegExp(`#define HIST_VALUE_SIZE ${RUNQLAT_HIST_SIZE}\\b`));
  assert.match(header, new RegExp(`#define HIST_KEY_SIZE ${RUNQLAT_KEY_SIZE}\\b`));
  const d = dump([
    { key: 4026531836, epoch: 7, slots: { 0: 1, 3: 5, 31: 2 }, comm: 'bash' },
    { key: 42, epoch: 8, slots: { 11: 9 }, comm: 'fifteen-chars-x' },
  ]);
  const [a, b] = decodeHistEntries(d, 'pidns');
  assert.equal(a.key, 4026531836, 'pid namespace inodes above 2^31 stay positive');
  assert.equal(a.epoch, 7);
  assert.equal(a.slots.length, 32);
  assert.deepEqual([a.slots[0], a.slots[3], a.slots[31]], [1, 5, 2]);
  assert.equal(a.comm, 'bash');
  assert.deepEqual([b.key, b.epoch, b.slots[11], b.comm], [42, 8, 9, 'fifteen-chars-x']);
  assert.equal(decodeHistEntries(dump([{ key: -1, epoch: 0, slots: {}, comm: '' }]), 'none')[0].key, -1);
});

test('aggregate: intervals hold their own counts, histograms the sum, keys sorted, comm kept', () => {
  const agg = new HistAggregate('runqlat', 'thread', 'us');
  const e = (key: number, slots: Record<number, number>, comm = '') => {
    const s = new Array(32).fill(0);
    for (const [i, c] of Object.entries(slots)) s[Number(i)] = c;
    return { key, epoch: 1, slots: s, comm };
  };
  const u1 = agg.addInterval([e(20, { 2: 3 }, 'b'), e(10, { 5: 1 }, 'a')], 1_000, 0);
  assert.deepEqual(u1.keys.map((k) => k.key), [10, 20]);
  assert.deepEqual(fromBuckets(u1.interval.buckets), [0, 0, 3, 0, 0, 1]);
  const u2 = agg.addInterval([e(20, { 2: 1, 12: 2 })], 2_000, 3);
  assert.deepEqual(u2.keys.map((k) => [k.key, k.count]), [[20, 3]]);
  assert.equal(u2.dropped, 3);
  const r = agg.result(3);
  assert.equal(r.tracer, 'runqlat');
  assert.deepEqual(r.histograms.map((h) => [h.key, h.comm, h.count]), [[10, 'a', 1], [20, 'b', 6]]);
  assert.deepEqual(r.intervals.map((i) => i.timestampNs), [1_000, 2_000]);
  assert.deepEqual(fromBuckets(r.histograms[1].buckets), [0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
  assert.equal(r.dropped, 3);
});

test('aggregate without a per-key mode: one histogram, key -1, comm "all", even when empty', () => {
  const agg = new HistAggregate('runqlat', 'none', 'ms');
  assert.deepEqual(agg.result(0).histograms, [{ key: -1, comm: 'all', count: 0, buckets: [] }]);
  const u = agg.addInterval([{ key: -1, epoch: 0, slots: [0, 4, 2, ...new Array(29).fill(0)], comm: 'swapper/0' }], 5, 0);
  assert.deepEqual(u.keys, []);
  const r = agg.result(0);
  assert.equal(r.unit, 'ms');
  assert.deepEqual(r.histograms.map((h) => [h.key, h.comm, h.count]), [[-1, 'all', 6]]);
  assert.deepEqual(Object.keys(r).sort(), ['dropped', 'histograms', 'intervals', 'tracer', 'unit']);
});

test('kernel slot math (bpf/log2.bpf.h, built for the host) equals log2hist bucketIndex', (t) => {
  const cc = spawnSync('cc', ['--version']);
  if (cc.status !== 0) return t.skip('no host C compiler (cc) to build bpf/log2.bpf.h for the host');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log2-'));
  const src = path.join(dir, 'log2.c');
  fs.writeFileSync(
    src,
    `#include <stdio.h>
#include <stdint.h>
typedef uint64_t __u64; typedef uint32_t __u32;
#define __always_inline inline __attribute__((always_inline))
#include "log2.bpf.h"
int main(void) {
  __u64 v;
  while (scanf("%llu", (unsigned long long *)&v) == 1) printf("%u\\n", log2_slot(v, 32));
  return 0;
}
`,
  );
  const build = spawnSync('cc', ['-O2', '-I', path.join(repoRoot, 'bpf'), '-o', path.join(dir, 'log2'), src], { encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  const values: bigint[] = [0n, 1n, 2n, 3n, 4n, 5n, 7n, 8n, 1023n, 1024n, 1025n, 65535n, 65536n, 2n ** 30n - 1n, 2n ** 30n, 2n ** 31n, 2n ** 40n, 2n ** 64n - 1n];
  for (let i = 0; i < 200; i++) values.push(BigInt(Math.floor(Math.random() * 2 ** 32)) * BigInt(1 + (i % 3) * 1000));
  const run = spawnSync(path.join(dir, 'log2'), { input: values.join('\n'), encoding: 'utf8' });
  const got = run.stdout.trim().split('\n').map(Number);
  values.forEach((v, i) => assert.equal(got[i], Math.min(31, bucketIndex(v)), `slot of ${v}`));
});

test('stats: p50/p90/p99 from buckets and max as the top bucket bound', () => {
  const counts: number[] = [];
  counts[bucketIndex(3)] = 50; // 2..3
  counts[bucketIndex(3000)] = 49; // 2048..4095
  counts[bucketIndex(20000)] = 1; // 16384..32767
  for (let i = 0; i < counts.length; i++) counts[i] ??= 0;
  const s = statsOf(toBuckets(counts));
  assert.equal(s.count, 100);
  assert.ok(s.p50 >= 2 && s.p50 <= 4, `p50 ${s.p50}`);
  assert.ok(s.p90 >= 2048 && s.p90 <= 4096, `p90 ${s.p90}`);
  assert.ok(s.p99 >= 2048 && s.p99 <= 4096, `p99 ${s.p99}`);
  assert.equal(s.max, 32767);
  assert.deepEqual(statsOf([]), { count: 0, p50: 0, p90: 0, p99: 0, max: 0 });
});

test('CLI text: runqlat layout, key headers per scope, a summary line', () => {
  const buckets = toBuckets([0, 2, 6, 0, 1]);
  const one = formatHistograms([{ key: -1, comm: 'all', count: 9, buckets }], 'none', 'us', 'runqlat');
  assert.match(one, /usecs\s+: count\s+distribution/);
  assert.match(one, /\n\s+2 -> 3\s+: 6\s+\|\*{40}\|/);
  assert.match(one, /count 9, p50 ~/);
  assert.doesNotMatch(one, /all/);
  const per = formatHistograms([{ key: 1234, comm: 'java', count: 9, buckets }], 'thread', 'ms', 'runqlat');
  assert.match(per, /^\ntid = 1234 java\n\s+msecs/);
});

test('validate: defaults, ranges and names in the errors', () => {
  assert.deepEqual(runqlatTracer.validate({}), { pid: 0, per: 'none', unit: 'us', intervalS: 1 });
  assert.deepEqual(runqlatTracer.validate({ pid: 5, per: 'pidns', unit: 'ms', intervalS: 0.5 }), { pid: 5, per: 'pidns', unit: 'ms', intervalS: 0.5 });
  assert.equal(runqlatTracer.validate({ per: 'cgroup' }).per, 'cgroup');
  for (const [bad, field] of [[{ per: 'container' }, 'per'], [{ unit: 'ns' }, 'unit'], [{ intervalS: 0 }, 'intervalS'], [{ pid: -1 }, 'pid'], [{ pid: 1.5 }, 'pid']] as const) {
    assert.throws(() => runqlatTracer.validate(bad), (e: unknown) => e instanceof StudioError && e.kind === 'input' && e.message.includes(field));
  }
});
