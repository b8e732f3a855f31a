// Preload mode and sampling, without the kernel: the report-file decoder against bytes laid out
// as native/preload/leak_table.h says; which programs can be preloaded and why not; the sampling
// estimator (unbiased, honest standard errors) on a simulated Poisson sampler; and how estimates
// read in the CodeLens, the leak view and the text report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeHeader, decodeSlots, HEADER_SIZE, LEAK_MAGIC, SLOT_SIZE, stackOf, STATE_OFFSET } from '../../extension/tracers/memleak/preloadDecode';
import { allocatorLibBlocker, glibcBlocker, preloadBlocker } from '../../extension/tracers/memleak/preload';
import { aggregate } from '../../extension/tracers/memleak/decode';
import { combineStdErr, sampleProbability, SampledTotals } from '../../extension/model/memleakSampling';
import { lensText, leakSites } from '../../extension/model/leakSites';
import { toRows } from '../../webview/memleak/model';
import { reportText } from '../../extension/model/memleakFormat';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memleak-preload-unit-'));
test.after(() => fs.rmSync(work, { recursive: true, force: true }));

test('leak_table.h: the header, the occupied slots and the interned stacks decode by offset', () => {
  const h = Buffer.alloc(HEADER_SIZE);
  h.writeBigUInt64LE(LEAK_MAGIC, 0);
  h.writeUInt32LE(1, 8);
  h.writeUInt32LE(4242, 12);
  h.writeBigUInt64LE(4n, 16); // slots
  h.writeBigUInt64LE(256n, 24);
  h.writeBigUInt64LE(2n, 80); // stacks used
  h.writeBigUInt64LE(3n, 88); // frames used
  h.writeBigUInt64LE(7n, 136); // table full
  h.writeUInt32LE(1, STATE_OFFSET);
  h.writeUInt32LE(2, 156);
  const hdr = decodeHeader(h)!;
  assert.deepEqual([hdr.pid, hdr.slots, hdr.slotsOff, hdr.stacksUsed, hdr.framesUsed, hdr.tableFull, hdr.state, hdr.unwinder], [4242, 4, 256, 2, 3, 7, 1, 2]);
  assert.equal(decodeHeader(Buffer.alloc(HEADER_SIZE)), undefined, 'no magic: not (yet) a report');

  const slots = Buffer.alloc(4 * SLOT_SIZE);
  const put = (i: number, addr: bigint, size: number, ts: bigint, stack: number) => {
    slots.writeBigUInt64LE(addr, i * SLOT_SIZE);
    slots.writeBigUInt64LE(BigInt(size), i * SLOT_SIZE + 8);
    slots.writeBigUInt64LE(ts, i * SLOT_SIZE + 16);
    slots.writeBigInt64LE(BigInt(stack), i * SLOT_SIZE + 24);
  };
  put(1, 0x7f0000001000n, 100, 5n, 0);
  put(3, 0x100000000n, 300, 6n, -1); // low 32 bits zero: still a record
  assert.deepEqual(decodeSlots(slots), [
    { address: 0x7f0000001000n, size: 100, timestampNs: 5n, stackId: 0 },
    { address: 0x100000000n, size: 300, timestampNs: 6n, stackId: -1 },
  ]);

  const dir = Buffer.alloc(16);
  dir.writeUInt32LE(0, 0);
  dir.writeUInt32LE(1, 4);
  dir.writeUInt32LE(1, 8);
  dir.writeUInt32LE(2, 12);
  const frames = Buffer.alloc(24);
  [0x401000n, 0x402000n, 0x403000n].forEach((a, i) => frames.writeBigUInt64LE(a, i * 8));
  assert.deepEqual(stackOf(dir, frames, 0), [0x401000n]);
  assert.deepEqual(stackOf(dir, frames, 1), [0x402000n, 0x403000n]);
  assert.deepEqual(stackOf(dir, frames, -1), []);
  assert.deepEqual(stackOf(dir, frames, 5), []);
});

test('preloadBlocker: dynamic programs pass; setuid, setgid, static, scripts of them and non-ELF files say why', () => {
  assert.equal(preloadBlocker('/bin/true'), undefined);
  const suid = path.join(work, 'suid');
  fs.copyFileSync('/bin/true', suid);
  fs.chmodSync(suid, 0o4755);
  assert.match(preloadBlocker(suid)!, /is setuid: the dynamic loader ignores LD_PRELOAD/);
  const sgid = path.join(work, 'sgid');
  fs.copyFileSync('/bin/true', sgid);
  fs.chmodSync(sgid, 0o2755);
  assert.match(preloadBlocker(sgid)!, /is setgid/);
  const script = path.join(work, 'script.sh');
  fs.writeFileSync(script, '#!/bin/sh\necho hi\n', { mode: 0o755 });
  assert.equal(preloadBlocker(script), undefined, 'a script is judged by its interpreter');
  const viaSuid = path.join(work, 'via-suid.sh');
  fs.writeFileSync(viaSuid, `#!${suid} -x\n`, { mode: 0o755 });
  assert.match(preloadBlocker(viaSuid)!, /is setuid/);
  const text = path.join(work, 'notelf');
  fs.writeFileSync(text, 'hello', { mode: 0o755 });
  assert.match(preloadBlocker(text)!, /is not an ELF program/);
  // a static executable: an ELF header and one PT_LOAD, no PT_INTERP
  const elf = Buffer.alloc(64 + 56);
  elf.writeUInt32BE(0x7f454c46, 0);
  elf[4] = 2;
  elf[5] = 1;
  elf.writeUInt16LE(2, 16);
  elf.writeBigUInt64LE(64n, 32);
  elf.writeUInt16LE(56, 54);
  elf.writeUInt16LE(1, 56);
  elf.writeUInt32LE(1, 64);
  const stat = path.join(work, 'static');
  fs.writeFileSync(stat, elf, { mode: 0o755 });
  assert.match(preloadBlocker(stat)!, /is statically linked: there is no dynamic loader/);
  assert.match(preloadBlocker(path.join(work, 'absent'))!, /cannot be read/);
});

test('allocatorLibBlocker: a library exporting malloc is interposed by name; prefixes need uprobes', () => {
  const libc = ['/lib/x86_64-linux-gnu/libc.so.6', '/lib/aarch64-linux-gnu/libc.so.6'].find((f) => fs.existsSync(f));
  if (libc) assert.equal(allocatorLibBlocker(libc, undefined), undefined);
  assert.match(allocatorLibBlocker('/bin/true', undefined)!, /exports no malloc/);
  assert.match(allocatorLibBlocker('/bin/true', 'je_')!, /--symbol-prefix je_: prefixed entry points/);
});

test('glibcBlocker: a glibc older than the library needs says so; newer or equal passes', () => {
  const lib = path.join(work, 'fake.so');
  // a shared object whose .dynstr names GLIBC_2.34 (section headers only: what the check reads)
  const strtab = Buffer.from('\0.dynstr\0.shstrtab\0');
  const dynstr = Buffer.from('\0libc.so.6\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.29\0');
  const shoff = 64 + strtab.length + dynstr.length;
  const b = Buffer.alloc(shoff + 3 * 64);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2;
  b[5] = 1;
  b.writeUInt16LE(3, 16);
  b.writeBigUInt64LE(BigInt(shoff), 40);
  b.writeUInt16LE(64, 58);
  b.writeUInt16LE(3, 60);
  b.writeUInt16LE(2, 62);
  strtab.copy(b, 64);
  dynstr.copy(b, 64 + strtab.length);
  const sh = (i: number, name: number, type: number, off: number, size: number) => {
    b.writeUInt32LE(name, shoff + i * 64);
    b.writeUInt32LE(type, shoff + i * 64 + 4);
    b.writeBigUInt64LE(BigInt(off), shoff + i * 64 + 24);
    b.writeBigUInt64LE(BigInt(size), shoff + i * 64 + 32);
  };
  sh(1, 1, 3, 64 + strtab.length, dynstr.length);
  sh(2, 9, 3, 64, strtab.length);
  fs.writeFileSync(lib, b);
  assert.match(glibcBlocker(lib, '2.31')!, /glibc 2.31 is older than the 2.34 the leak tracer library was built for/);
  assert.equal(glibcBlocker(lib, '2.34'), undefined);
  assert.equal(glibcBlocker(lib, '2.36'), undefined);
  assert.equal(glibcBlocker(lib, '3.0'), undefined);
  // a container's C library (inject mode): named as the process's, with its own remedy
  assert.equal(glibcBlocker(lib, '2.28', "process 7's", 'its loader would refuse it'), "process 7's glibc 2.28 is older than the 2.34 the leak tracer library was built for (its loader would refuse it)");
});

test('sampling: p = 1 - exp(-s/N); a simulated Poisson sampler gives unbiased estimates whose standard error is honest', () => {
  assert.equal(sampleProbability(100, 0), 1);
  assert.ok(Math.abs(sampleProbability(1024, 1024) - (1 - Math.exp(-1))) < 1e-12);
  assert.ok(sampleProbability(1, 1 << 20) > 0);
  // xorshift: deterministic
  let seed = 0x2545f4914f6cdd1dn;
  const rand = () => {
    seed ^= (seed << 13n) & 0xffffffffffffffffn;
    seed ^= seed >> 7n;
    seed ^= (seed << 17n) & 0xffffffffffffffffn;
    return Number(seed & 0xfffffffffffffn) / 2 ** 52;
  };
  const N = 4096;
  const trials = 200;
  let within = 0;
  let sumErr = 0;
  const truth = { bytes: 0, count: 0 };
  const sizes: number[] = [];
  for (let i = 0; i < 3000; i++) sizes.push(16 + Math.floor(rand() * 8000));
  for (const s of sizes) {
    truth.bytes += s;
    truth.count++;
  }
  for (let t = 0; t < trials; t++) {
    const est = new SampledTotals();
    let countdown = -N * Math.log(1 - rand());
    for (const s of sizes) {
      countdown -= s;
      if (countdown > 0) continue;
      countdown = -N * Math.log(1 - rand());
      est.add(s, N);
    }
    const err = est.bytes - truth.bytes;
    sumErr += err;
    if (Math.abs(err) <= 2 * est.bytesStdErr) within++;
  }
  // unbiased: the mean error over 200 trials is far below one trial's standard error
  const oneSe = Math.sqrt(sizes.reduce((a, s) => a + ((1 - sampleProbability(s, N)) / sampleProbability(s, N) ** 2) * s * s, 0));
  assert.ok(Math.abs(sumErr / trials) < 0.3 * oneSe, `mean error ${sumErr / trials}, one s.e. ${oneSe}`);
  // about 95 % of estimates lie within two standard errors (binomial slack for 200 trials)
  assert.ok(within >= 0.88 * trials && within <= trials, `${within}/${trials} within 2 s.e.`);
  assert.equal(combineStdErr([3, 4]), 5);
  assert.equal(combineStdErr([undefined]), undefined);
});

test('aggregate with meanBytes: per-stack estimates with standard errors; exact without', () => {
  const recs = [
    { address: 1n, size: 1000, timestampNs: 1n, stackId: 7 },
    { address: 2n, size: 1000, timestampNs: 2n, stackId: 7 },
    { address: 3n, size: 100000, timestampNs: 3n, stackId: 8 },
  ];
  const [big, small] = aggregate(recs, 10n, 0, 1000);
  assert.equal(big.stackId, 8);
  assert.equal(big.bytes, Math.round(100000 / (1 - Math.exp(-100))));
  assert.equal(big.bytesStdErr, 0, 'a block 100× the interval is always sampled');
  assert.equal(small.bytes, Math.round(2000 / (1 - Math.exp(-1))));
  assert.equal(small.allocations, Math.round(2 / (1 - Math.exp(-1))));
  assert.ok(small.bytesStdErr! > 0);
  const exact = aggregate(recs, 10n, 0);
  assert.equal(exact[1].bytes, 2000);
  assert.equal(exact[1].bytesStdErr, undefined);
});

test('estimates read as estimates: CodeLens, leak view rows, text report', () => {
  assert.equal(
    lensText({ bytes: 409600, allocations: 100, oldestAgeMs: 12000, bytesStdErr: 20480 }),
    '⚠ ≈400 KB ± 20 KB outstanding in ≈100 allocations (sampled estimate) · oldest 12 s',
  );
  assert.equal(lensText({ bytes: 248, allocations: 1, oldestAgeMs: 80 }), '⚠ 248 B outstanding in 1 allocation · oldest 80 ms');
  const frame = { address: '0x1', module: '/w/a.out', function: 'f', file: '/w/a.c', line: 3 };
  const stacks = [
    { bytes: 3000, allocations: 3, oldestAgeMs: 1, frames: [frame], bytesStdErr: 300, allocationsStdErr: 0.5 },
    { bytes: 4000, allocations: 4, oldestAgeMs: 1, frames: [{ ...frame, address: '0x2' }], bytesStdErr: 400, allocationsStdErr: 0.5 },
  ];
  const [site] = leakSites(stacks, ['/w']);
  assert.equal(site.bytes, 7000);
  assert.equal(site.bytesStdErr, 500, 'two stacks at one line: errors add in quadrature');
  const [row] = toRows(stacks.map((s, i) => ({ ...s, key: String(i), history: [s.bytes] })));
  assert.equal(row.bytes, '≈3.9 KB ± 400 B');
  assert.equal(row.count, '≈4 ± 0.5');
  const text = reportText(stacks, 'final', 524288);
  assert.match(text, /estimates from sampling every ~524288 bytes; ± is one standard error/);
  assert.match(text, /≈3000 ± 300 bytes in ≈3 ± 0.5 allocations/);
});
