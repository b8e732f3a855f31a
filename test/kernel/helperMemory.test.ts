// The helper's memory stays flat over a memleak session on a program that allocates and frees
// ~10k times a second (test/fixtures/c/allocfree.c). RSS is sampled after a warm-up and every
// 5 s after; growth must stay under a bound. (The benchmark suite measures the same figure as a
// row; these tests only assert bounds.)
//  - CI (45 s): --unwind dwarf, every allocation's stack copied and unwound by CFI, on a program
//    that frees everything but 16 blocks kept once. Before the fix, the tracer's per-allocation
//    id table grew 10k entries a second here, and per-stack garbage grew V8's young generation:
//    RSS rose 37 MiB from 5 s to 45 s (after it: −0.1, +7.1 and +18.9 in three runs).
//  - Opt-in (EBPF_STUDIO_LONG_TESTS=1, 60 s, EBPF_STUDIO_LONG_SECONDS changes it): the default
//    unwinding (frame pointers) with a slow leak.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import type { MemleakUpdate } from '../../extension/protocol/memleak';
import { helperJs, kernelSkipReason, repoRoot, sleep } from '../helpers';

const kernelSkip = kernelSkipReason();
const longSkip = kernelSkip ?? (process.env.EBPF_STUDIO_LONG_TESTS === '1' ? undefined : 'long test: set EBPF_STUDIO_LONG_TESTS=1 to run it');
const LONG_SECONDS = Number(process.env.EBPF_STUDIO_LONG_SECONDS ?? 60);

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

interface Run {
  /** RSS right after the attach */
  early: number;
  /** RSS every 5 s from the attach */
  all: number[];
  /** RSS at the end of the warm-up */
  start: number;
  end: number;
  samples: number[];
  updates: number;
  last?: MemleakUpdate;
  dropped: number;
}

/**
 * Traces allocfree (args) through a helper for `seconds`; RSS once `warmup` seconds passed and
 * every 5 s after. `afterStart` runs once the session is attached.
 */
async function session(args: string[], unwind: 'dwarf' | 'auto', seconds: number, warmup: number, afterStart?: (pid: number) => void): Promise<Run> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-longmem-'));
  const exe = path.join(dir, 'allocfree');
  const cc = spawnSync('cc', ['-g', '-O0', '-fno-omit-frame-pointer', path.join(repoRoot, 'test/fixtures/c/allocfree.c'), '-o', exe], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const target = spawn(exe, args, { stdio: 'ignore' });
  const helper = spawn(process.execPath, [helperJs], { stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = createMessageConnection(new StreamMessageReader(helper.stdout), new StreamMessageWriter(helper.stdin));
  conn.listen();
  let updates = 0;
  let last: MemleakUpdate | undefined;
  conn.onNotification(proto.sessionData, (p) => {
    updates++;
    last = p.update as MemleakUpdate;
  });
  try {
    const s = await conn.sendRequest(proto.sessionStart, { tracer: 'memleak', options: { pid: target.pid, mode: 'uprobe', kernel: false, minAgeMs: 0, sampleRate: 1, minSize: 0, maxSize: 0, top: 10, intervalS: 1, unwind } });
    afterStart?.(target.pid!);
    // Every 5 s from the attach on; `start` is the sample at the end of the warm-up.
    const attached = Date.now();
    const early = rssMb(helper.pid!);
    const all: number[] = [];
    for (let at = 5; at <= seconds; at += 5) {
      await sleep(Math.max(0, at * 1000 - (Date.now() - attached)));
      all.push(rssMb(helper.pid!));
    }
    const start = all[Math.floor(warmup / 5) - 1];
    const samples = all.slice(Math.floor(warmup / 5));
    const end = samples[samples.length - 1];
    const result = await conn.sendRequest(proto.sessionStop, { sessionId: s.sessionId });
    const dropped = (result.result as { dropped: number }).dropped;
    console.log(`helper RSS ${start.toFixed(1)} MB after ${warmup} s → ${end.toFixed(1)} MB after ${seconds} s (at attach ${early.toFixed(1)}, every 5 s: ${all.map((x) => x.toFixed(1)).join(' ')}); ${updates} updates, ${last?.totalAllocations} outstanding, dropped ${dropped}`);
    return { early, all, start, end, samples, updates, last, dropped };
  } finally {
    conn.dispose();
    helper.stdin.end();
    target.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('helper memory stays flat while memleak --unwind dwarf unwinds ~10k stacks/s (45 s)', { timeout: 120_000 }, async (t) => {
  if (kernelSkip) return t.skip(kernelSkip);
  // 5 s warm-up: the unwinder has parsed the modules' CFI and the first reports are symbolized.
  const r = await session(['0', 'once'], 'dwarf', 45, 5, (pid) => process.kill(pid, 'SIGUSR1'));
  assert.ok(r.updates >= 30, `live updates kept coming (${r.updates})`);
  // Exact outcome: the 16 blocks kept once (after the attach, on SIGUSR1) are all that is
  // outstanding, with keep_once's stack unwound by CFI; everything else was freed.
  // The live report is taken while the loop runs, so one block of its malloc/free pair can be
  // between the two (minAgeMs 0): the kept blocks are checked on their own stack.
  const kept = r.last!.stacks.filter((s) => s.frames.some((f) => f.function === 'keep_once'));
  assert.equal(kept.reduce((n, s) => n + s.allocations, 0), 16, 'the 16 kept blocks are outstanding under keep_once');
  assert.equal(kept.reduce((n, s) => n + s.bytes, 0), 16_000);
  assert.ok((r.last?.totalAllocations ?? 0) <= 17, `nothing else outstanding but a block in flight (${r.last?.totalAllocations})`);
  const fns = kept.flatMap((s) => s.frames.map((f) => f.function));
  assert.ok(fns.includes('keep_once') && fns.includes('main'), `keep_once ← main unwound (${fns.join(' ')})`);
  // Measured on 2 shared cores, MiB (RSS 5 s after the attach → after 45 s, highest in between):
  //   after the fix:  103.0 → 110.1 (122.1); 103.0 → 102.9 (120.6); 105.8 → 124.7 (124.7)
  //   before it:      117.0 → 153.7 (153.7), still climbing
  // RSS saws up and down by up to ~20 MiB within a session (V8's old generation filling between
  // collections; the CLI traced the same way for 120 s stays within 104-111 MiB from 20 s on),
  // so the bounds leave room for one tooth at its top.
  const peak = Math.max(...r.samples);
  assert.ok(r.end - r.start < 25, `helper RSS grew by ${(r.end - r.start).toFixed(1)} MB from 5 s to 45 s (bound 25)`);
  assert.ok(peak - r.start < 30, `helper RSS peaked ${(peak - r.start).toFixed(1)} MB above its value 5 s in (bound 30)`);
});

test(`helper memory stays flat over a ${LONG_SECONDS} s memleak session at ~10k allocations/s`, { timeout: (LONG_SECONDS + 60) * 1000 }, async (t) => {
  if (longSkip) return t.skip(longSkip);
  const r = await session([], 'auto', LONG_SECONDS, Math.min(10, LONG_SECONDS / 4));
  assert.ok(r.updates >= LONG_SECONDS / 2, `live updates kept coming (${r.updates})`);
  assert.ok((r.last?.totalAllocations ?? 0) > 0, 'the tracer saw the allocations (the kept ones are outstanding)');
  assert.ok(r.end - r.start < 20, `helper RSS grew by ${(r.end - r.start).toFixed(1)} MB`);
});
