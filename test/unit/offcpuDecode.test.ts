// Off-CPU profiles without a kernel: the totals map decoder (bpf/offcpu.h layout), per-state
// totals, and time weights kept through the flame model, folded stacks and pprof.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addHeld, addOpenIntervals, decodeHeld, decodeTotals, decodeStarts, OFFCPU_KEY_SIZE, OFFCPU_THREAD_REC_SIZE, OFFCPU_VAL_SIZE, parseProcStack, stateTotals } from '../../extension/tracers/offcpu/tracer';

import type { ProfileFrame, ProfileResult } from '../../extension/protocol/profile';
import { fromPprof, toPprof } from '../../extension/model/pprof';
import { fromProfileResult } from '../../extension/model/flamegraph/profileData';
import { toFolded } from '../../extension/model/flamegraph/formats';
import { buildTree } from '../../extension/model/flamegraph/model';
import { formatUs, nodeStates } from '../../webview/flamegraph/stateView';
import { THREAD_STATES } from '../../extension/protocol/profile';
import { formatTimeSummary } from '../../extension/cli/commands/offcpu';

const frame = (fn: string, kind: ProfileFrame['kind'] = 'native'): ProfileFrame => ({ address: '0x1000', module: '/bin/x', function: fn, file: null, line: null, kind });

const doc: ProfileResult = {
  tracer: 'profile',
  unit: 'us',
  event: 'offcpu',
  frequency: 0,
  samples: 4,
  lost: 0,
  stacks: [
    { count: 3, value: 30_000, pid: 7, tid: 8, comm: 'w', state: 'sleep', frames: [frame('schedule', 'kernel'), frame('wait_long'), frame('main')] },
    { count: 1, value: 10_000, pid: 7, tid: 8, comm: 'w', state: 'lock', frames: [frame('futex_wait', 'kernel'), frame('wait_short'), frame('main')] },
  ],
};

describe('off-CPU profile documents', () => {
  test('decodeTotals reads struct offcpu_key and offcpu_val', () => {
    const keys = Buffer.alloc(OFFCPU_KEY_SIZE * 2);
    const vals = Buffer.alloc(OFFCPU_VAL_SIZE * 2);
    keys.writeUInt32LE(100, 0);
    keys.writeUInt32LE(101, 4);
    keys.writeInt32LE(5, 8);
    keys.writeInt32LE(-14, 12);
    keys.writeUInt32LE(3, 16); // lock
    keys.write('worker', 24);
    vals.writeBigUInt64LE(2_500_000n, 0);
    vals.writeBigUInt64LE(4n, 8);
    keys.writeUInt32LE(4, OFFCPU_KEY_SIZE + 16); // preempted
    const [a, b] = decodeTotals(keys, vals, 2);
    assert.deepEqual(a, { pid: 100, tid: 101, userStackId: 5, kernStackId: -14, state: 'lock', comm: 'worker', totalNs: 2_500_000, count: 4 });
    assert.equal(b.state, 'preempted');
  });

  test('running totals held in the thread records (struct offcpu_thread_rec: tid, pid, offcpu_start agg_*) join the same totals key or add one', () => {
    const records = Buffer.alloc(2 * OFFCPU_THREAD_REC_SIZE);
    records.writeUInt32LE(11, 0);
    records.writeUInt32LE(10, 4);
    records.writeUInt32LE(12, OFFCPU_THREAD_REC_SIZE);
    records.writeUInt32LE(10, OFFCPU_THREAD_REC_SIZE + 4);
    // thread 11 holds 3 intervals, 7 µs, of the key already in the totals; thread 12 holds nothing
    const v = 8;
    records.writeBigUInt64LE(7000n, v + 24);
    records.writeBigUInt64LE(3n, v + 32);
    records.writeInt32LE(5, v + 40);
    records.writeInt32LE(6, v + 44);
    records.writeUInt32LE(3, v + 48);
    records.writeUInt32LE(10, v + 52);
    records.write('pong', v + 56);
    // thread 12 is off CPU since ts 999 with stacks 7/8, sleeping; thread 11 is on CPU (ts 0)
    const w = OFFCPU_THREAD_REC_SIZE + 8;
    records.writeBigUInt64LE(999n, w);
    records.writeInt32LE(7, w + 8);
    records.writeInt32LE(8, w + 12);
    records.writeUInt32LE(1, w + 16);
    assert.deepEqual(decodeStarts(records), [{ tid: 12, ts: 999n, userStackId: 7, kernStackId: 8, state: 'sleep' }]);
    const held = decodeHeld(records);
    assert.deepEqual(held, [{ pid: 10, tid: 11, userStackId: 5, kernStackId: 6, state: 'lock', comm: 'pong', totalNs: 7000, count: 3 }]);
    const totals = [{ pid: 10, tid: 11, userStackId: 5, kernStackId: 6, state: 'lock' as const, comm: 'pong', totalNs: 1000, count: 1 }];
    assert.deepEqual(addHeld(totals, held), [{ ...totals[0], totalNs: 8000, count: 4 }]);
    assert.equal(totals[0].totalNs, 1000, 'the decoded totals are not changed in place');
    assert.deepEqual(addHeld([], held), held);
  });

  test('open intervals at the end join their stack or add one; /proc stacks parse to names', () => {
    const base = { pid: 1, tid: 2, userStackId: 3, kernStackId: 4, comm: 'a', state: 'sleep' as const };
    const merged = addOpenIntervals([{ ...base, totalNs: 100, count: 2 }], [
      { ...base, ns: 50 },
      { ...base, state: 'io', ns: 7 },
    ]);
    assert.deepEqual(
      merged.map((e) => [e.state, e.totalNs, e.count]),
      [
        ['sleep', 150, 3],
        ['io', 7, 1],
      ],
    );
    assert.deepEqual(parseProcStack('[<0>] do_sys_pause+0x2a/0x50\n[<0>] __x64_sys_pause+0x11/0x20\n'), ['do_sys_pause', '__x64_sys_pause']);
  });

  test('per-state totals and the flame model weigh µs, rooted at the state', () => {
    assert.deepEqual(stateTotals(doc.stacks), { sleep: 30_000, lock: 10_000 });
    const p = fromProfileResult(doc);
    assert.equal(p.total, 40_000);
    assert.equal(p.unit, 'us');
    const folded = toFolded(p).trim().split('\n').sort();
    assert.deepEqual(folded, ['[off-CPU: lock (futex wait)];main;wait_short;futex_wait_[k] 10000', '[off-CPU: sleeping];main;wait_long;schedule_[k] 30000']);
  });

  test('the flame graph colours every box by the state at its root', () => {
    const p = fromProfileResult(doc);
    const tree = buildTree(p, p.stacks);
    const frameState = Int8Array.from(p.frames, (f) => (f.name === '[off-CPU: sleeping]' ? THREAD_STATES.indexOf('sleep') : f.name === '[off-CPU: lock (futex wait)]' ? THREAD_STATES.indexOf('lock') : -1));
    const states = nodeStates(tree, frameState);
    const byName = new Map<string, string>();
    for (let n = 1; n < tree.size; n++) byName.set(p.frames[tree.frame[n]].name, THREAD_STATES[states[n]]);
    assert.equal(byName.get('wait_long'), 'sleep');
    assert.equal(byName.get('futex_wait'), 'lock');
    assert.equal(formatUs(30_000), '30.0 ms');
    assert.equal(formatUs(2_500_000), '2.50 s');
  });

  test('pprof: off_cpu/microseconds is the default sample type; µs, counts and states survive', () => {
    const back = fromPprof(toPprof(doc));
    assert.equal(back.unit, 'us');
    assert.equal(back.event, 'offcpu');
    const byState = Object.fromEntries(back.stacks.map((s) => [s.state, { count: s.count, value: s.value }]));
    assert.deepEqual(byState, { sleep: { count: 3, value: 30_000 }, lock: { count: 1, value: 10_000 } });
  });

  test('the text summary counts self time where the program waits, with per-state totals', () => {
    const text = formatTimeSummary({ ...doc, states: stateTotals(doc.stacks) });
    assert.match(text, /sleeping\s+30\.0 ms\s+75\.0%/);
    assert.match(text, /lock \(futex wait\)\s+10\.0 ms\s+25\.0%/);
    const rows = text.split('\n').filter((l) => /^\s*\d+\.\d%/.test(l));
    assert.match(rows[0], /75\.0%\s+75\.0%\s+30\.0 ms\s+wait_long/);
    assert.ok(!rows.some((l) => /schedule|futex_wait/.test(l)), 'scheduler frames are not where the program waits');
  });

  test('CPU documents: value is the sample count', () => {
    const cpu: ProfileResult = { tracer: 'profile', unit: 'samples', frequency: 99, samples: 2, lost: 0, stacks: [{ count: 2, value: 2, pid: 1, tid: 1, comm: 'c', frames: [frame('f')] }] };
    const back = fromPprof(toPprof(cpu));
    assert.equal(back.unit, undefined);
    assert.equal(back.stacks[0].count, 2);
    assert.equal(fromProfileResult(cpu).total, 2);
  });
});
