// `memleak overhead`: a malloc/free loop (bench/workloads/mallocfree.c) timed per pair in four
// processes side by side: untraced; traced by our CLI (`memleak --pid`); the "floor", empty BPF
// programs (bpf/bench_floor.bpf.c) on exactly the uprobes and uretprobes the memleak tracer
// attaches for a C program; and heaptrack (LD_PRELOAD). Rounds alternate between the four.
// ours/floor shows what our BPF logic adds on top of what the kernel charges per probe hit.
// A fifth process runs with the preload interposer (dist/libebpf-studio-preload.so, set up as
// `memleak --mode preload` sets it up: LD_PRELOAD and a report folder), the launch mode's default.
// Two more are attached to while they run: one by `memleak --pid --mode inject` (the interposer
// injected), one by `heaptrack -p` (heaptrack's own injection through gdb), the peer for attaching.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BpfObject } from '../native/index';
import { openObject } from '../extension/tracers/bpfObject';
import { readMaps } from '../extension/sys/proc/maps';
import { benchTracerEnv, have, interleave, LineProcess, median, ratioOfRounds, root, round, startCli, startUntil, type Attached, type BenchContext, type Row } from './lib';

/**
 * The probes extension/tracers/memleak/tracer.ts attaches in --pid mode to a C program (libc only;
 * libstdc++ is not mapped): [symbol, has a uretprobe]. Kept in step with ALLOCATOR_PROBES and
 * MMAP_PROBES there; free and munmap have no return probe.
 */
const MEMLEAK_LIBC_PROBES: [string, boolean][] = [
  ['malloc', true],
  ['calloc', true],
  ['realloc', true],
  ['free', false],
  ['reallocarray', true],
  ['posix_memalign', true],
  ['aligned_alloc', true],
  ['memalign', true],
  ['valloc', true],
  ['pvalloc', true],
  ['mmap', true],
  ['munmap', false],
];

/** Attaches the empty programs to the target's libc; returns the object (close() detaches). */
export function attachFloor(pid: number, log: (m: string) => void): { obj: BpfObject; probes: number } {
  const env = benchTracerEnv(log);
  const libc = readMaps(pid).find((m) => /\/libc\.so\.6$/.test(m.path))?.path;
  if (!libc) throw new Error(`pid ${pid} maps no libc.so.6`);
  const obj = openObject(env, 'bench_floor');
  let probes = 0;
  try {
    obj.load();
    for (const [symbol, ret] of MEMLEAK_LIBC_PROBES) {
      try {
        if (ret) {
          obj.attachUprobe('floor_exit', { binary: libc, symbol, pid, retprobe: true });
          probes++;
        }
        obj.attachUprobe('floor_enter', { binary: libc, symbol, pid, retprobe: false });
        probes++;
      } catch (e) {
        log(`  floor: ${symbol} not probed: ${(e as Error).message}`);
      }
    }
  } catch (e) {
    obj.close();
    throw e;
  }
  return { obj, probes };
}

export async function benchMemleak(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 9;
  // Pairs per round, chosen so each variant's round takes ~0.2-1 s on this kind of machine.
  const pairs = { untraced: 4_000_000, probed: ctx.quick ? 25_000 : 60_000, heaptrack: ctx.quick ? 400_000 : 1_000_000, preload: ctx.quick ? 400_000 : 1_000_000 };
  const preloadLib = path.join(root, 'dist', 'libebpf-studio-preload.so');
  const preloadDir = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'bench-leak-'));
  const bin = path.join(ctx.buildDir, 'mallocfree');
  const withHeaptrack = have('heaptrack');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-heaptrack-'));
  const procs: Record<string, LineProcess> = {
    untraced: new LineProcess(bin, ['bench']),
    ours: new LineProcess(bin, ['bench']),
    floor: new LineProcess(bin, ['bench']),
  };
  if (withHeaptrack) procs.heaptrack = new LineProcess('heaptrack', ['-o', path.join(tmp, 'bench'), bin, 'bench'], { cwd: tmp });
  if (fs.existsSync(preloadLib)) {
    procs.preload = new LineProcess(bin, ['bench'], { env: { ...process.env, LD_PRELOAD: preloadLib, EBPF_STUDIO_PRELOAD_DIR: preloadDir } });
    // as `memleak --sample-bytes 524288 -- COMMAND` sets it up
    procs.preloadSampled = new LineProcess(bin, ['bench'], { env: { ...process.env, LD_PRELOAD: preloadLib, EBPF_STUDIO_PRELOAD_DIR: preloadDir, EBPF_STUDIO_PRELOAD_SAMPLE_BYTES: '524288' } });
  }
  const injectable = fs.existsSync(path.join(root, 'dist', 'ebpf-studio-inject'));
  if (injectable) procs.inject = new LineProcess(bin, ['bench']);
  const heaptrackAttach = withHeaptrack && have('gdb');
  if (heaptrackAttach) procs.heaptrackAttach = new LineProcess(bin, ['bench']);
  let tracer: Attached | undefined;
  let injected: Attached | undefined;
  let heaptrackP: Attached | undefined;
  let floor: { obj: BpfObject; probes: number } | undefined;
  try {
    for (const p of Object.values(procs)) await p.next('ready');
    if (procs.inject) injected = await startCli(['memleak', '--pid', String(procs.inject.pid), '--mode', 'inject', '--interval', '60']);
    if (procs.heaptrackAttach) heaptrackP = await startUntil('heaptrack', ['-o', path.join(tmp, 'attached'), '-p', String(procs.heaptrackAttach.pid)], 'stdout', /injection finished/, 120_000);
    // The frame-pointer path: this row measures our probe logic against the floor (CFI stacks have their own row, ./memleakUnwind.ts).
    tracer = await startCli(['memleak', '--pid', String(procs.ours.pid), '--mode', 'uprobe', '--unwind', 'fp']);
    floor = attachFloor(procs.floor.pid, ctx.log);
    const run = (p: LineProcess, n: number) => () => p.ask(String(n), 'ns_per_op');
    // Warm caches and the allocator in every process (and fault in the probed pages) once.
    for (const [k, p] of Object.entries(procs)) await p.ask(String(k === 'untraced' ? pairs.untraced : k.startsWith('heaptrack') || k.startsWith('preload') || k === 'inject' ? pairs.heaptrack / 10 : pairs.probed / 10), 'ns_per_op');
    const variants: Record<string, () => Promise<number>> = {
      untraced: run(procs.untraced, pairs.untraced),
      ours: run(procs.ours, pairs.probed),
      floor: run(procs.floor, pairs.probed),
    };
    if (procs.heaptrack) variants.heaptrack = run(procs.heaptrack, pairs.heaptrack);
    if (procs.preload) variants.preload = run(procs.preload, pairs.preload);
    if (procs.preloadSampled) variants.preloadSampled = run(procs.preloadSampled, pairs.untraced);
    if (procs.inject) variants.inject = run(procs.inject, pairs.preload);
    if (procs.heaptrackAttach) variants.heaptrackAttach = run(procs.heaptrackAttach, pairs.heaptrack);
    const r = await interleave(rounds, variants, ctx.log);
    const ns = (k: string) => round(median(r[k]), 1);
    const detail =
      `ns per malloc+free pair (median): untraced ${ns('untraced')}, ours ${ns('ours')}, floor ${ns('floor')}` +
      `${r.heaptrack ? `, heaptrack ${ns('heaptrack')}` : ''}; the floor is ${floor.probes} empty uprobe/uretprobe programs on the same libc functions as ours; ` +
      `${rounds} interleaved rounds of ${pairs.probed.toLocaleString('en-US')} pairs (probed), ${pairs.untraced.toLocaleString('en-US')} (untraced)${r.heaptrack ? `, ${pairs.heaptrack.toLocaleString('en-US')} (heaptrack)` : ''}. ` +
      `A pair hits 3 probes (malloc entry + return, free entry): ~${round((median(r.floor) - median(r.untraced)) / 1000, 2)} µs of the floor is the kernel's uprobe cost alone.`;
    const preloadRows: Row[] = r.preload
      ? [
          {
            name: 'memleak preload mode (ns per malloc+free)',
            value: ns('preload'),
            unit: 'ns',
            // the issue's goal: launch mode costs what heaptrack costs, or less
            target: r.heaptrack ? ns('heaptrack') : null,
            better: 'lower',
            peer: r.heaptrack ? { name: 'heaptrack', value: ns('heaptrack') } : null,
            detail:
              `same run, interleaved, median ns per malloc+free pair: preload ${ns('preload')}, heaptrack ${r.heaptrack ? ns('heaptrack') : 'not installed'}, uprobe mode ${ns('ours')}, untraced ${ns('untraced')}; ` +
              `preload / untraced ${round(ratioOfRounds(r.preload, r.untraced), 1)}×, uprobe / preload ${round(median(r.ours) / median(r.preload), 0)}×; ${pairs.preload.toLocaleString('en-US')} pairs per round; ` +
              `preload sampled at 512 KiB (--sample-bytes 524288) ${ns('preloadSampled')}; ` +
              'each malloc unwinds its stack with libunwind (CFI), interns it and records the block in the table kept in the process; each free removes it',
          },
        ]
      : [];
    const injectRows: Row[] = r.inject
      ? [
          {
            name: 'memleak inject mode, attached (ns per malloc+free)',
            value: ns('inject'),
            unit: 'ns',
            // attaching must cost no more than heaptrack -p, and at most 1.5x the launched preload mode
            target: r.heaptrackAttach ? Math.min(ns('heaptrackAttach'), round(1.5 * median(r.preload), 1)) : round(1.5 * median(r.preload), 1),
            better: 'lower',
            peer: r.heaptrackAttach ? { name: 'heaptrack -p', value: ns('heaptrackAttach') } : null,
            detail:
              `same run, interleaved, median ns per malloc+free pair of processes attached to while running: memleak --pid --mode inject ${ns('inject')}, ` +
              `heaptrack -p ${r.heaptrackAttach ? ns('heaptrackAttach') : 'not measured (heaptrack or gdb missing)'}; launched preload ${ns('preload')} (inject / preload ${round(median(r.inject) / median(r.preload), 2)}×), ` +
              `uprobe attach ${ns('ours')}, untraced ${ns('untraced')}; attach took ${injected ? Math.round(injected.attachMs) : '?'} ms for ours (CLI start to "Ctrl-C to end"), ${heaptrackP ? Math.round(heaptrackP.attachMs) : '?'} ms for heaptrack -p`,
          },
        ]
      : [];
    return [
      ...preloadRows,
      ...injectRows,
      {
        name: 'memleak overhead (ours / untraced, per malloc+free)',
        value: round(ratioOfRounds(r.ours, r.untraced), 1),
        unit: '×',
        target: null,
        better: 'lower',
        peer: r.heaptrack ? { name: 'heaptrack / untraced', value: round(ratioOfRounds(r.heaptrack, r.untraced), 1) } : null,
        detail,
      },
      {
        name: 'memleak overhead (ours / floor)',
        value: round(ratioOfRounds(r.ours, r.floor), 3),
        unit: '×',
        target: 1.2,
        better: 'lower',
        peer: { name: 'floor / untraced', value: round(ratioOfRounds(r.floor, r.untraced), 1) },
        limit: `our BPF logic adds ~${round((median(r.ours) - median(r.floor)) / 1000, 2)} µs per malloc+free pair on top of the ${round((median(r.floor) - median(r.untraced)) / 1000, 2)} µs the kernel charges for the three probe hits: a frame-pointer walk of the user stack (bpf_get_stackid) at every malloc return, and an insert into / delete from the allocs hash map (BPF_F_NO_PREALLOC: each insert takes an element from the kernel's BPF memory allocator); sampling (--sample-rate N) skips the stack walk and the insert for N-1 of N allocations`,
      },
    ];
  } finally {
    floor?.obj.close();
    await tracer?.stop();
    await injected?.stop();
    await heaptrackP?.stop();
    for (const p of Object.values(procs)) await p.close();
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(preloadDir, { recursive: true, force: true });
  }
}
