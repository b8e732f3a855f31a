// The profiler's user-space side without a kernel: map decoders mirroring bpf/profile.h, the
// online-CPU list, option validation, stack assembly and the CLI's text summary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { decodeCounts, decodeProfileKey, parseCpuList, PROFILE_KEY_SIZE, PROFILE_STAT, PROFILE_STAT_COUNT, stackIdLost } from '../../extension/tracers/profile/decode';
import { sumU64 } from '../../extension/tracers/bpfObject';
import { assemble, readStacks } from '../../extension/tracers/profile/stacks';
import { PROFILE_MAX_STACK_COPY, PROFILE_NREGS, PROFILE_SAMPLE_HEADER_SIZE } from '../../extension/tracers/profile/dwarf';
import { profileTracer, preserveFramePointerAdvice } from '../../extension/tracers/profile/tracer';
import { formatSummary } from '../../extension/cli/commands/profile';
import type { ProfileFrame } from '../../extension/protocol/profile';

function key(pid: number, tid: number, u: number, k: number, comm: string): Buffer {
  const b = Buffer.alloc(PROFILE_KEY_SIZE);
  b.writeUInt32LE(pid, 0);
  b.writeUInt32LE(tid, 4);
  b.writeInt32LE(u, 8);
  b.writeInt32LE(k, 12);
  b.write(comm, 16, 'utf8');
  return b;
}

test('profile.h constants match the decoder', () => {
  const h = fs.readFileSync(path.join(__dirname, '../../bpf/profile.h'), 'utf8');
  const def = (n: string) => Number(new RegExp(`#define ${n} (\\d+)`).exec(h)![1]);
  assert.equal(def('PROFILE_KEY_SIZE'), PROFILE_KEY_SIZE);
  assert.equal(def('PROFILE_STAT_SAMPLES'), PROFILE_STAT.samples);
  assert.equal(def('PROFILE_STAT_LOST_USTACK'), PROFILE_STAT.lostUserStack);
  assert.equal(def('PROFILE_STAT_LOST_KSTACK'), PROFILE_STAT.lostKernelStack);
  assert.equal(def('PROFILE_STAT_LOST_COUNTS'), PROFILE_STAT.lostCounts);
  assert.equal(def('PROFILE_STAT_LOST'), PROFILE_STAT.lost);
  assert.equal(def('PROFILE_STAT_SAMPLES_DWARF'), PROFILE_STAT.samplesDwarf);
  assert.equal(def('PROFILE_STAT_LOST_RINGBUF'), PROFILE_STAT.lostRingbuf);
  assert.equal(def('PROFILE_STAT_NO_USER_REGS'), PROFILE_STAT.noUserRegs);
  assert.equal(def('PROFILE_STAT_COUNT'), PROFILE_STAT_COUNT);
  assert.equal(def('PROFILE_SAMPLE_HEADER_SIZE'), PROFILE_SAMPLE_HEADER_SIZE);
  assert.equal(def('PROFILE_NREGS'), PROFILE_NREGS);
  assert.equal(def('PROFILE_MAX_STACK_COPY'), PROFILE_MAX_STACK_COPY);
});

test('counts keys and values decode by offset', () => {
  assert.deepEqual(decodeProfileKey(key(100, 101, 5, -14, 'cpusplit')), { pid: 100, tid: 101, userStackId: 5, kernStackId: -14, comm: 'cpusplit' });
  const keys = Buffer.concat([key(1, 1, 1, -14, 'a'), key(2, 3, -17, 4, 'bbbbbbbbbbbbbbb')]);
  const values = Buffer.alloc(16);
  values.writeBigUInt64LE(7n, 0);
  values.writeBigUInt64LE(9n, 8);
  const e = decodeCounts(keys, values, 2);
  assert.equal(e[1].comm, 'bbbbbbbbbbbbbbb');
  assert.equal(e[1].count, 9);
  assert.equal(e[0].count, 7);
});

test('per-CPU sums, lost stack ids, CPU lists', () => {
  const b = Buffer.alloc(24);
  b.writeBigUInt64LE(3n, 0);
  b.writeBigUInt64LE(4n, 16);
  assert.equal(sumU64(b), 7);
  assert.equal(sumU64(null), 0);
  assert.ok(stackIdLost(-17) && stackIdLost(-12));
  assert.ok(!stackIdLost(-14) && !stackIdLost(3));
  assert.deepEqual(parseCpuList('0-3,6,8-9\n'), [0, 1, 2, 3, 6, 8, 9]);
  assert.deepEqual(parseCpuList('0'), [0]);
  assert.throws(() => parseCpuList('x'), /unexpected CPU list/);
});

test('stacks: kernel frames on top of user frames, leaf first, lost stacks marked, each stack read once', () => {
  let reads = 0;
  const stacks = new Map<number, bigint[]>([
    [1, [0x401000n, 0x402000n]],
    [2, [0xffffffff81000010n]],
  ]);
  const raw = readStacks(
    [
      { pid: 5, tid: 5, userStackId: 1, kernStackId: 2, comm: 'x', count: 3 },
      { pid: 5, tid: 6, userStackId: 1, kernStackId: -14, comm: 'x', count: 8 },
      { pid: 5, tid: 6, userStackId: -17, kernStackId: 2, comm: 'x', count: 1 },
    ],
    (id) => {
      reads++;
      return BigUint64Array.from(stacks.get(id) ?? []);
    },
  );
  assert.equal(reads, 2);
  const named = (fn: string, kind: ProfileFrame['kind'], a: bigint): ProfileFrame[] => [{ address: `0x${a.toString(16)}`, module: 'm', function: fn, file: null, line: null, kind }];
  const k = new Map([[0xffffffff81000010n, named('do_sys', 'kernel', 0xffffffff81000010n)]]);
  const u = new Map([[5, new Map([['L' + 0x401000n, named('leaf', 'native', 0x401000n)], ['R' + 0x402000n, named('main', 'native', 0x402000n)]])]]);
  const out = assemble(raw, k, u);
  assert.deepEqual(out.map((s) => s.count), [8, 3, 1], 'hottest first');
  assert.deepEqual(out[1].frames.map((f) => f.function), ['do_sys', 'leaf', 'main']);
  assert.deepEqual(out[2].frames.map((f) => f.function), ['do_sys', '[lost user stack]']);
  assert.equal(assemble(raw, new Map(), new Map())[1].frames[1].function, null, 'unresolved frames keep their address');
});

test('options are validated with field names', () => {
  assert.deepEqual(profileTracer.validate({ pid: 12 }), { pid: 12, frequency: 99, includeIdle: false, javaPerfMap: true, stackStorageSize: 16384, unwind: 'auto', stackCopyBytes: 16384, java: 'auto' });
  assert.equal(profileTracer.validate({ stackStorageSize: 1 }).stackStorageSize, 1);
  assert.throws(() => profileTracer.validate({ stackStorageSize: 0 }), /stackStorageSize must be between 1 and 262144/);
  assert.throws(() => profileTracer.validate({ stackStorageSize: 262145 }), /stackStorageSize must be between 1 and 262144/);
  assert.throws(() => profileTracer.validate({ frequency: 0 }), /frequency must be between 1 and 10000/);
  assert.throws(() => profileTracer.validate({ pid: -1 }), /pid must be between/);
  assert.throws(() => profileTracer.validate({ pid: 'x' }), /pid must be an integer/);
});

test('PreserveFramePointer advice shows the command with the flag', () => {
  const msg = preserveFramePointerAdvice(42, ['/usr/bin/java', '-cp', '.', 'Main']);
  assert.match(msg, /Java stacks will be truncated/);
  assert.match(msg, /"\/usr\/bin\/java -XX:\+PreserveFramePointer -cp \. Main"/);
});

test('text summary lists the hottest functions with file:line', () => {
  const f = (fn: string, line: number): ProfileFrame => ({ address: '0x1', module: '/bin/a', function: fn, file: '/src/a.c', line, kind: 'native' });
  const text = formatSummary({
    tracer: 'profile',
    frequency: 99,
    samples: 4,
    lost: 0,
    stacks: [
      { count: 3, pid: 1, tid: 1, comm: 'a', frames: [f('hot_a', 12), f('main', 27)] },
      { count: 1, pid: 1, tid: 1, comm: 'a', frames: [f('hot_b', 18), f('main', 28)] },
    ],
  });
  assert.match(text, /4 samples at 99 Hz, 0 lost/);
  assert.match(text, / 75\.0%  75\.0%  hot_a  \/src\/a\.c:12/);
  assert.match(text, / 25\.0%  25\.0%  hot_b/);
});
