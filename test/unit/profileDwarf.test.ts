// The profiler's dwarf mode without a kernel: the sample decoder (mirrors struct profile_sample in
// bpf/profile.h), ring sizing, option validation, and what the view and the loss hint say.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeSample, PROFILE_SAMPLE_HEADER_SIZE, sampleIp, sampleSp } from '../../extension/tracers/profile/dwarf';
import { profileTracer, ringBytes } from '../../extension/tracers/profile/tracer';
import { unwindDetails, unwindSummary } from '../../extension/model/unwindText';
import { lostWhat } from '../../extension/tracers/lossHistory';

test('decodeSample reads the header by offset and the stack bytes that follow it', () => {
  const stack = Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const rec = Buffer.alloc(PROFILE_SAMPLE_HEADER_SIZE + stack.length);
  rec.writeBigUInt64LE(123456789n, 0);
  rec.writeUInt32LE(4242, 8);
  rec.writeUInt32LE(4243, 12);
  rec.writeInt32LE(-14, 16);
  rec.writeUInt32LE(stack.length, 20);
  rec.write('worker\0', 24, 'latin1');
  rec.writeBigUInt64LE(0x7ffc0000n, 40 + 7 * 8);
  rec.writeBigUInt64LE(0x401000n, 40 + 16 * 8);
  rec.writeUInt32LE(17, 176);
  stack.copy(rec, PROFILE_SAMPLE_HEADER_SIZE);
  const s = decodeSample(rec);
  assert.equal(s.ts, 123456789n);
  assert.equal(s.pid, 4242);
  assert.equal(s.tid, 4243);
  assert.equal(s.kernStackId, -14);
  assert.equal(s.comm, 'worker');
  assert.equal(s.nsTid, 17);
  assert.equal(sampleSp(s), 0x7ffc0000n);
  assert.equal(sampleIp(s), 0x401000n);
  assert.deepEqual([...s.stack], [...stack]);
  assert.throws(() => decodeSample(Buffer.alloc(100)), /shorter than its 184-byte header/);
});

test('the ring buffer holds about half a second of full samples, as a power of two within bounds', () => {
  assert.equal(ringBytes(99, 16384, 2), 2 << 20);
  assert.equal(ringBytes(1, 1024, 1), 1 << 20);
  const big = ringBytes(999, 32768, 64);
  assert.equal(big & (big - 1), 0);
  assert.equal(big, 64 << 20);
  assert.ok(ringBytes(499, 16384, 8) >= (499 * 8 * 16384) / 2);
});

test('unwind options: auto by default, the three choices, copy size bounds', () => {
  const d = profileTracer.validate({ pid: 1 });
  assert.equal(d.unwind, 'auto');
  assert.equal(d.stackCopyBytes, 16384);
  for (const u of ['auto', 'dwarf', 'fp']) assert.equal(profileTracer.validate({ unwind: u }).unwind, u);
  assert.throws(() => profileTracer.validate({ unwind: 'lbr' }), /unwind/);
  assert.throws(() => profileTracer.validate({ stackCopyBytes: 65536 }), /stackCopyBytes/);
});

test('the view says how stacks were unwound, module by module', () => {
  assert.match(unwindSummary({ mode: 'fp' })!, /^stacks: frame pointers \(--unwind fp\)/);
  assert.match(unwindDetails({ mode: 'fp' })!, /frame pointers walked in the kernel/);
  const u = {
    mode: 'dwarf' as const,
    truncated: 3,
    modules: [
      { module: '/usr/lib/x86_64-linux-gnu/libc.so.6', cfi: 'eh_frame' as const, framePointers: 0.04 },
      { module: '[vdso: 77]', cfi: 'eh_frame' as const },
      { module: '/opt/app/stripped', cfi: 'none' as const },
    ],
  };
  // a native program: no JIT to name, so no perf map in the header
  assert.equal(unwindSummary(u), 'stacks: CFI for 2 modules, frame pointers for 1, 3 samples cut short');
  assert.equal(unwindSummary({ ...u, perfMap: true }), 'stacks: CFI for 2 modules, frame pointers for 1, JIT by perf map, 3 samples cut short');
  const d = unwindDetails(u)!;
  assert.match(d, /unwound by CFI/);
  assert.match(d, /CFI \(2\): libc\.so\.6, \[vdso\]/);
  assert.match(d, /Frame pointers only \(1\): stripped/);
  assert.match(d, /3 samples deeper than the stack copy/);
  assert.equal(unwindSummary(undefined), undefined);
});

test('a dwarf profile that lost samples names the ring buffer of stack copies', () => {
  assert.match(lostWhat('profile', { unwind: { mode: 'dwarf' } }).cause, /ring buffer of stack copies/);
  assert.match(lostWhat('profile', { unwind: { mode: 'fp' } }).cause, /kernel stack map/);
  assert.match(lostWhat('profile').cause, /kernel stack map/);
});
