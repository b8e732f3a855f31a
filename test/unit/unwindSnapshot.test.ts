// The CFI unwinder (native addon, libdw) on stack snapshots recorded once from the -O2
// no-frame-pointer fixture (test/fixtures/c/unwind/record.ts): registers + stack copy + maps,
// with the fixture binaries they came from. No kernel, no root: every sample must unwind to main
// through real callers of the fixture's call graph, whichever libc this machine has.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, test } from 'node:test';
import { loadAddon } from '../../extension/sys/addon';
import { ElfFile } from '../../extension/sys/elf/elf';
import { findMapping, parseMaps, type Mapping } from '../../extension/sys/proc/maps';
import { distDir } from '../helpers';

const SNAP = path.join(__dirname, '..', 'fixtures', 'c', 'unwind', 'snapshot');

interface Snapshot {
  maps: string;
  samples: { tid: number; regs: string; stack: string }[];
}

/** Who may call whom in unwindfix.c / unwlib.c ('?' = a libc frame, e.g. inside qsort). */
const CALLS: Record<string, string[]> = {
  main: ['caller_a', 'caller_b', 'recurse', 'sort_work', 'lib_caller', '?'],
  caller_a: ['leaf'],
  caller_b: ['leaf'],
  recurse: ['recurse', 'leaf'],
  sort_work: ['?', 'qsort'],
  lib_caller: ['lib_spin'],
  lib_spin: ['lib_leaf'],
};

function load(): { doc: Snapshot; maps: Mapping[] } | string {
  if (!fs.existsSync(path.join(SNAP, 'samples.json.gz'))) return 'no recorded snapshot';
  const doc = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(SNAP, 'samples.json.gz'))).toString('utf8')) as Snapshot;
  doc.maps = doc.maps.split('@FIXTURE@').join(SNAP);
  return { doc, maps: parseMaps(doc.maps) };
}

/** Function names from the fixture's own symbol tables; anything else (libc, ld.so) is '?'. */
function namer(maps: Mapping[]): (pc: bigint, isReturn: boolean) => string {
  const elfs = new Map<string, ElfFile>();
  return (pc, isReturn) => {
    const m = findMapping(maps, pc);
    if (!m || !m.path.startsWith(SNAP)) return '?';
    let elf = elfs.get(m.path);
    if (!elf) elfs.set(m.path, (elf = new ElfFile(m.path)));
    const vaddr = elf.offsetToVaddr(pc - (isReturn ? 1n : 0n) - m.start + m.offset);
    if (vaddr === undefined) return '?';
    const sym = elf.symbols('symtab').find((s) => s.type === 2 && vaddr >= s.value && vaddr < s.value + s.size);
    return sym?.name ?? '?';
  };
}

describe('CFI unwinder on recorded stack snapshots', () => {
  let addon: ReturnType<typeof loadAddon> | undefined;
  try {
    addon = loadAddon(distDir);
  } catch {
    addon = undefined;
  }
  const loaded = load();
  const skip = !addon ? 'the native addon is not built (npm run build)' : typeof loaded === 'string' ? loaded : undefined;

  test('every recorded sample unwinds to main through real callers', { skip }, () => {
    const { doc, maps } = loaded as Exclude<typeof loaded, string>;
    const u = new addon!.Unwinder({ maps: doc.maps });
    const name = namer(maps);
    const leaves = new Set<string>();
    try {
      assert.ok(doc.samples.length >= 10, `${doc.samples.length} samples recorded`);
      for (const s of doc.samples) {
        const r = u.unwind(s.tid, Buffer.from(s.regs, 'hex'), Buffer.from(s.stack, 'base64'));
        const names = [...r.frames].map((pc, i) => name(pc, i > 0));
        const chain = names.slice(0, names.indexOf('main') + 1).reverse();
        assert.ok(chain.length > 0 && chain[0] === 'main', `does not reach main: ${names.join(' <- ')}`);
        for (let i = 0; i + 1 < chain.length; i++) {
          const [caller, callee] = [chain[i], chain[i + 1]];
          if (caller === '?') continue;
          assert.ok(CALLS[caller]?.includes(callee), `${caller} does not call ${callee}: ${chain.join(' -> ')}`);
        }
        if (chain.includes('by_value')) assert.equal(chain[chain.indexOf('by_value') - 1], '?', 'by_value is called back from inside libc');
        leaves.add(chain[chain.length - 1]);
      }
      // The recording saw several of the fixture's paths, not one.
      assert.ok(leaves.size >= 3, `leaves seen: ${[...leaves].join(', ')}`);
    } finally {
      u.close();
    }
  });

  test('a stack copy too short to reach the outermost frame is reported as truncated', { skip }, () => {
    const { doc } = loaded as Exclude<typeof loaded, string>;
    const u = new addon!.Unwinder({ maps: doc.maps });
    try {
      const s = doc.samples[0];
      const whole = u.unwind(s.tid, Buffer.from(s.regs, 'hex'), Buffer.from(s.stack, 'base64'));
      const cut = u.unwind(s.tid, Buffer.from(s.regs, 'hex'), Buffer.from(s.stack, 'base64').subarray(0, 16));
      assert.ok(cut.frames.length < whole.frames.length, `${cut.frames.length} vs ${whole.frames.length} frames`);
      assert.equal(cut.truncated, true);
      assert.equal(whole.truncated, false);
    } finally {
      u.close();
    }
  });

  test('unwindInto writes the frames unwind() returns, into the caller\'s array, with the same truncation', { skip }, () => {
    const { doc } = loaded as Exclude<typeof loaded, string>;
    const u = new addon!.Unwinder({ maps: doc.maps });
    const out = new BigUint64Array(127);
    try {
      for (const s of doc.samples) {
        const regs = Buffer.from(s.regs, 'hex');
        const stack = Buffer.from(s.stack, 'base64');
        for (const copy of [stack, stack.subarray(0, 16)]) {
          const r = u.unwind(s.tid, regs, copy);
          const n = u.unwindInto(s.tid, regs, copy, out);
          assert.deepEqual([...out.subarray(0, n)], [...r.frames]);
          assert.equal(u.truncated, r.truncated);
        }
      }
      // A short array holds the innermost frames only.
      const s = doc.samples[0];
      const two = new BigUint64Array(2);
      const full = u.unwind(s.tid, Buffer.from(s.regs, 'hex'), Buffer.from(s.stack, 'base64')).frames;
      assert.equal(u.unwindInto(s.tid, Buffer.from(s.regs, 'hex'), Buffer.from(s.stack, 'base64'), two), Math.min(2, full.length));
      assert.deepEqual([...two].slice(0, Math.min(2, full.length)), [...full.subarray(0, 2)]);
    } finally {
      u.close();
    }
  });

  test('bad arguments are type errors, never crashes', { skip }, () => {
    const { doc } = loaded as Exclude<typeof loaded, string>;
    const u = new addon!.Unwinder({ maps: doc.maps });
    assert.throws(() => u.unwind(1, Buffer.alloc(8), Buffer.alloc(0)), /17 little-endian u64/);
    assert.throws(() => u.unwind(1, Buffer.alloc(136), Buffer.alloc(0), 0), /maxFrames/);
    assert.throws(() => u.unwindInto(1, Buffer.alloc(136), Buffer.alloc(0), new Float64Array(4) as unknown as BigUint64Array), /unwindInto\(tid, regs, stack, out: BigUint64Array\)/);
    assert.throws(() => u.unwindInto(1, Buffer.alloc(136), Buffer.alloc(0), new BigUint64Array(0)), /1\.\.1024 frames/);
    u.close();
    assert.throws(() => u.unwind(1, Buffer.alloc(136), Buffer.alloc(0)), /closed/);
    assert.throws(() => u.unwindInto(1, Buffer.alloc(136), Buffer.alloc(0), new BigUint64Array(4)), /closed/);
    assert.throws(() => new addon!.Unwinder({ maps: 42 } as unknown as { maps: string }), /maps must be a string/);
    assert.throws(() => new addon!.Unwinder(-3), /positive/);
  });
});
