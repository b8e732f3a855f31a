// "Profile the slow calls": the pieces of the latency tracer that load, attach and read the
// wall-clock profile bpf/latency_slowprof.bpf.h keeps of the calls slower than the threshold. Its
// totals have the off-CPU tracer's layout, so they are read, symbolized and shaped by the same
// code into the same document (unit µs, a state per stack) the flame graph, --folded and --pprof
// take.
import type { BpfObject } from '../../../native/index';
import type { ProfileFrame, ProfileResult } from '../../protocol/profile';
import { fromBpfError, unsuitableError } from '../../protocol/errors';
import type { ProcessImage, Symbolizer } from '../../sys/symbolize';
import { kernelRelease, releaseAtLeast } from '../../sys/kernelRelease';
import { onlineCpus } from '../profile/tracer';
import { readStacks, symbolizeStacks } from '../profile/stacks';
import { decodeTotals } from '../offcpu/decode';
import { CfiTables, cfiRowCapacity, cfiStackReader, cfiSummary, cfiUnwindInfo } from '../cfiTables';
import { offcpuStacks, stateTotals } from '../offcpu/tracer';

/** The programs the profile adds to the latency object. */
export const SLOWPROF_PROGRAMS = ['lat_prof_switch', 'lat_prof_sample'];
/** Per-thread buffers and totals when profiling; one entry each otherwise (the maps exist in every load). */
const THREADS_MAX = 4096;
const STACKS_MAX = 16384;
const TOTALS_MAX = 16384;

export function checkSlowProfileKernel(): void {
  const release = kernelRelease();
  if (!releaseAtLeast(release, 5, 15))
    throw unsuitableError(`profiling the slow calls needs Linux 5.15 or later (this kernel is ${release}): a switched-out thread's user registers are read with bpf_task_pt_regs. Measure without --profile-slow`);
}

/** The target's unwind tables, compiled (or found) before the object is loaded: they size its maps. */
export function planCfi(pid: number, log: (m: string) => void): CfiTables {
  const t = new CfiTables(log);
  t.plan(pid);
  return t;
}

/** Tables for the libraries the target loaded since (dlopen), before their frames are walked again. */
export function refreshCfi(cfi: CfiTables, obj: BpfObject, pid: number, log: (m: string) => void): void {
  try {
    cfi.plan(pid);
    cfi.load(obj);
  } catch (e) {
    log(`latency: loading unwind tables for new mappings of pid ${pid}: ${(e as Error).message}`);
  }
}

/** Sizes the profile's maps and sets its constants, before the object is loaded. */
export function configureSlowProfile(obj: BpfObject, on: boolean, frequency: number, cfi: CfiTables | undefined): Record<string, number | bigint | boolean> {
  obj.setMaxEntries('prof_threads', on ? THREADS_MAX : 1);
  obj.setMaxEntries('stacks', on ? STACKS_MAX : 1);
  obj.setMaxEntries('totals', on ? TOTALS_MAX : 1);
  if (on && cfi) cfi.size(obj, cfiRowCapacity(cfi.plannedRows), STACKS_MAX);
  else {
    // without tables the walk's maps stay one entry each (cfi_stacks is preallocated)
    obj.setMaxEntries('cfi_stacks', 1);
    obj.setMaxEntries('cfi_procs', 1);
  }
  return { profile_slow: on, prof_sample_ns: on ? BigInt(Math.round(1e9 / frequency)) : 0n, prof_cfi: Boolean(on && cfi) };
}

/** The scheduler hook and one cpu-clock sampler per CPU; returns their links. */
export function attachSlowProfile(obj: BpfObject, frequency: number): number[] {
  const links: number[] = [];
  try {
    links.push(obj.attach('lat_prof_switch'));
  } catch (e) {
    throw fromBpfError('attaching the scheduler tracepoint (tp_btf/sched_switch) of the slow-call profile', e);
  }
  try {
    for (const cpu of onlineCpus()) links.push(obj.attachPerfEvent('lat_prof_sample', { type: 'cpu-clock', frequency, cpu }));
  } catch (e) {
    throw fromBpfError(`opening cpu-clock perf events at ${frequency} Hz for the slow-call profile`, e);
  }
  return links;
}

/** The kept totals as a wall-clock profile document, symbolized against the target's image. */
export async function readSlowProfile(obj: BpfObject, o: { pid: number; frequency: number; lost: number; cfi?: CfiTables }, sym: Symbolizer, image: ProcessImage | undefined, log: (m: string) => void): Promise<ProfileResult> {
  const d = obj.mapDump('totals');
  const entries = decodeTotals(d.keys, d.values, d.count);
  const fromMap = (id: number) => obj.readStack('stacks', id);
  const read = o.cfi ? cfiStackReader(obj, fromMap) : { read: fromMap, notes: <T>(raw: T[]) => raw };
  const raw = read.notes(readStacks(entries, read.read));
  if (o.cfi) log(cfiSummary(obj, o.cfi));
  const kernelFrames = new Map<bigint, ProfileFrame[]>();
  const userFrames = new Map<number, Map<string, ProfileFrame[]>>();
  await symbolizeStacks(raw, sym, (pid) => (pid === o.pid ? image : undefined), kernelFrames, userFrames, log);
  const stacks = offcpuStacks(
    raw,
    entries.map((e) => e.state),
    entries.map((e) => e.totalNs),
    kernelFrames,
    userFrames,
  );
  return {
    tracer: 'profile',
    unit: 'us',
    event: 'wall',
    states: stateTotals(stacks),
    frequency: o.frequency,
    samples: entries.reduce((n, e) => n + e.count, 0),
    lost: o.lost,
    stacks,
    unwind: o.cfi ? { mode: 'cfi', ...cfiUnwindInfo(obj, o.cfi) } : { mode: 'fp' },
  };
}
