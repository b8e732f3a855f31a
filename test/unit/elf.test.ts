import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { ElfFile, ElfError, gnuBuildId, kernelBuildId, parseNotes, withElf } from '../../extension/sys/elf/elf';
import { libjvmUsdt } from '../../extension/sys/proc/processes';
import { findJdks } from '../../extension/sys/proc/processes';

const jdks = findJdks();
const withUsdt = jdks.find((j) => j.usdt);

test('USDT notes of a real libjvm.so include the hotspot GC probes with their arguments', (t) => {
  if (!withUsdt) return t.skip('no JDK with USDT probes installed (apt-get install openjdk-17-jdk-headless)');
  withElf(withUsdt.libjvm, (elf) => {
    const probes = elf.usdtProbes();
    assert.ok(probes.length > 400, `expected hundreds of probes, got ${probes.length}`);
    const begin = probes.find((p) => p.provider === 'hotspot' && p.name === 'gc__begin');
    const end = probes.find((p) => p.provider === 'hotspot' && p.name === 'gc__end');
    const pool = probes.find((p) => p.provider === 'hotspot' && p.name === 'mem__pool__gc__begin');
    assert.ok(begin && end && pool);
    assert.match(begin.args, /^1@/, 'gc__begin has one 1-byte argument (full GC flag)');
    assert.equal(end.args, '');
    assert.equal(pool.args.split(' ').length, 8, 'mem__pool__gc__begin has 8 arguments');
    assert.ok(pool.args.split(' ').every((a) => a.startsWith('8@')));
    assert.equal(begin.semaphore, 0n);
    assert.ok(begin.location > 0n);
    assert.equal(elf.hasUsdt(), true);
    assert.match(elf.buildId() ?? '', /^[0-9a-f]{40}$/);
  });
});

test('a libjvm copy without .note.stapsdt reports no USDT', (t) => {
  if (!withUsdt) return t.skip('no JDK with USDT probes installed');
  const { spawnSync } = require('node:child_process') as typeof import('node:child_process');
  const os = require('node:os') as typeof import('node:os');
  const path = require('node:path') as typeof import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-elf-'));
  const copy = path.join(dir, 'libjvm.so');
  const r = spawnSync('objcopy', ['--remove-section=.note.stapsdt', withUsdt.libjvm, copy]);
  if (r.status !== 0) return t.skip(`objcopy unavailable: ${r.stderr}`);
  try {
    const r = libjvmUsdt(copy);
    assert.equal(r.usdt, false);
    assert.equal(r.count, 0);
    withElf(copy, (elf) => assert.equal(elf.hasUsdt(), false));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('symbols, segments and build-id of libc', () => {
  const libc = fs.readFileSync('/proc/self/maps', 'utf8').split('\n').map((l) => l.split(/\s+/)[5]).find((p) => p && /\/libc[.-]/.test(p))!;
  withElf(libc, (elf) => {
    const syms = elf.symbols();
    const malloc = syms.find((s) => s.name === 'malloc');
    assert.ok(malloc, 'malloc is exported');
    assert.ok(malloc.value > 0n);
    assert.ok(elf.segments.some((s) => s.type === 1), 'has PT_LOAD');
    const text = elf.section('.text')!;
    assert.equal(elf.offsetToVaddr(BigInt(text.offset)), text.addr);
  });
});

test('non-ELF files are refused with a clear error', () => {
  assert.throws(() => new ElfFile('/etc/hostname'), (e: unknown) => e instanceof ElfError && /not an ELF file/.test((e as Error).message));
  assert.throws(() => new ElfFile('/nonexistent/file'), /ENOENT/);
});

test('raw ELF notes: names and descriptors 4-aligned, the GNU build-id found among others', () => {
  const note = (name: string, type: number, desc: Buffer) => {
    const n = Buffer.from(name + '\0');
    const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
    const head = Buffer.alloc(12);
    head.writeUInt32LE(n.length, 0);
    head.writeUInt32LE(desc.length, 4);
    head.writeUInt32LE(type, 8);
    return Buffer.concat([head, pad(n), pad(desc)]);
  };
  const id = Buffer.from('48dc540c8b76393804ca8088dbfa7d42911a9444', 'hex');
  const raw = Buffer.concat([note('Linux', 6, Buffer.from('x')), note('GNU', 1, Buffer.alloc(16)), note('GNU', 3, id)]);
  const notes = parseNotes(raw, 'test');
  assert.deepEqual(notes.map((n) => [n.name, n.type, n.desc.length]), [['Linux', 6, 1], ['GNU', 1, 16], ['GNU', 3, 20]]);
  assert.equal(gnuBuildId(notes), id.toString('hex'));
  assert.equal(gnuBuildId(notes.slice(0, 2)), undefined);
});

test("the running kernel's build-id comes from /sys/kernel/notes", (t) => {
  let raw: Buffer;
  try {
    raw = fs.readFileSync('/sys/kernel/notes');
  } catch (e) {
    return t.skip(`/sys/kernel/notes is not readable here: ${(e as Error).message}`);
  }
  const id = kernelBuildId();
  if (id === undefined) return t.skip('this kernel was built without a GNU build-id note');
  assert.match(id, /^[0-9a-f]{40}$/);
  assert.ok(raw.includes(Buffer.from(id, 'hex')), 'the descriptor bytes are in the file');
  // perf (linux-perf), when installed, reads the same notes: the reference
  const perf = spawnSync('perf', ['buildid-list', '-k'], { encoding: 'utf8' });
  if (perf.status === 0 && perf.stdout.trim()) assert.equal(id, perf.stdout.trim());
  else t.diagnostic('perf is not installed: checked against the raw file only');
});
