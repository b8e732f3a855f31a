// JFR's garbage-collection events as our java-gc result document (what `ebpf-studio java-gc --json`
// prints and the GC view shows): one event per stop-the-world pause (jdk.GCPhasePause), named after
// its collection (jdk.GarbageCollection) in the JVM's own manager names, with the heap before and
// after (jdk.GCHeapSummary) and, for G1 and Parallel, the eden's (jdk.G1HeapSummary,
// jdk.PSHeapSummary: the JVM timeline's allocation rate comes from it), each pause's phases
// (jdk.GCPhasePauseLevel1); ZGC's and Shenandoah's concurrent cycles as cycles; safepoints from
// jdk.SafepointBegin / StateSynchronization / ExecuteVMOperation. Times are ns since the
// recording's start. Pure: no I/O.
import type { JavaGcEvent, JavaGcResult, JavaSafepoint } from '../../protocol/javaGc';
import { classify } from '../javaGcKinds';
import { buildResult } from '../javaGcStats';
import type { Chunk, EventVisitor, JfrObject } from './chunk';
import type { JfrClass } from './metadata';

/** JFR's collector names → the GarbageCollectorMXBean names our tracer reports. */
const MANAGER: Record<string, string> = {
  G1New: 'G1 Young Generation',
  G1Old: 'G1 Concurrent GC',
  G1Full: 'G1 Old Generation',
  DefNew: 'Copy',
  SerialOld: 'MarkSweepCompact',
  ParallelScavenge: 'PS Scavenge',
  ParallelOld: 'PS MarkSweep',
  Z: 'ZGC Pauses',
  'ZGC Major': 'ZGC Major Pauses',
  'ZGC Minor': 'ZGC Minor Pauses',
  Shenandoah: 'Shenandoah Pauses',
};
const CYCLES: Record<string, string> = { Z: 'ZGC Cycles', 'ZGC Major': 'ZGC Major Cycles', 'ZGC Minor': 'ZGC Minor Cycles', Shenandoah: 'Shenandoah Cycles' };

const WANTED = new Set(['jdk.GarbageCollection', 'jdk.GCPhasePause', 'jdk.GCHeapSummary', 'jdk.G1HeapSummary', 'jdk.PSHeapSummary', 'jdk.GCPhasePauseLevel1', 'jdk.SafepointBegin', 'jdk.SafepointStateSynchronization', 'jdk.SafepointEnd', 'jdk.ExecuteVMOperation', 'jdk.JVMInformation']);

interface Pause {
  gcId: number;
  name: string;
  startNs: number;
  durationNs: number;
  tid: number;
}

interface Safepoint {
  startNs: number;
  endNs: number;
  ttsNs: number;
  operation: string;
  tid: number;
}

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

export class JfrGcBuilder implements EventVisitor {
  private readonly gcs = new Map<number, { name: string; startNs: number; durationNs: number; tid: number }>();
  private readonly pauses: Pause[] = [];
  /** level-1 phases by gcId, in the order the recording has them */
  private readonly phases = new Map<number, { name: string; startNs: number; durationNs: number }[]>();
  private readonly heap = new Map<number, { before?: number; after?: number; committed?: number }>();
  /** eden used before and after each collection, by gcId, and the pool's name as the MXBean has it */
  private readonly eden = new Map<number, { name: string; before?: number; after?: number; committed?: number }>();
  private readonly safepoints = new Map<number, Safepoint>();
  private origin: number | undefined;
  private pid = 0;

  wants(t: JfrClass): boolean {
    return WANTED.has(t.name);
  }

  event(t: JfrClass, v: JfrObject, c: Chunk): void {
    this.origin ??= c.header.startNanos;
    const startNs = c.ticksToNanos(num(v.startTime)) - this.origin;
    const durationNs = c.durationNanos(num(v.duration));
    const tid = num(c.get(v, 'eventThread', 'osThreadId'));
    const gcId = num(v.gcId);
    switch (t.name) {
      case 'jdk.JVMInformation':
        this.pid = num(v.pid);
        break;
      case 'jdk.GarbageCollection':
        this.gcs.set(gcId, { name: c.str(v, 'name') ?? '?', startNs, durationNs, tid });
        break;
      case 'jdk.GCPhasePause':
        this.pauses.push({ gcId, name: c.str(v, 'name') ?? '', startNs, durationNs, tid });
        break;
      case 'jdk.GCHeapSummary': {
        const h = this.heap.get(gcId) ?? {};
        const when = c.str(v, 'when');
        if (when === 'Before GC') h.before = num(v.heapUsed);
        else if (when === 'After GC') {
          h.after = num(v.heapUsed);
          h.committed = num(c.get(v, 'heapSpace', 'committedSize'));
        }
        this.heap.set(gcId, h);
        break;
      }
      case 'jdk.GCPhasePauseLevel1': {
        const list = this.phases.get(gcId) ?? [];
        // a collection's phases are a few dozen; a hostile recording's are capped here
        if (list.length < 256) list.push({ name: c.str(v, 'name') ?? '?', startNs, durationNs });
        this.phases.set(gcId, list);
        break;
      }
      case 'jdk.G1HeapSummary':
      case 'jdk.PSHeapSummary':
        this.edenSummary(t.name, v, c);
        break;
      default:
        this.safepoint(t.name, v, startNs, durationNs, tid, c);
    }
  }

  private edenSummary(type: string, v: JfrObject, c: Chunk): void {
    const g1 = type === 'jdk.G1HeapSummary';
    const used = num(g1 ? v.edenUsedSize : c.get(v, 'edenSpace', 'used'));
    const committed = num(g1 ? v.edenTotalSize : c.get(v, 'edenSpace', 'committedSize'));
    const e = this.eden.get(num(v.gcId)) ?? { name: g1 ? 'G1 Eden Space' : 'PS Eden Space' };
    if (c.str(v, 'when') === 'Before GC') e.before = used;
    else {
      e.after = used;
      e.committed = committed;
    }
    this.eden.set(num(v.gcId), e);
  }

  private safepoint(type: string, v: JfrObject, startNs: number, durationNs: number, tid: number, c: Chunk): void {
    const id = num(v.safepointId);
    if (type === 'jdk.ExecuteVMOperation' && v.safepoint !== true) return;
    let s = this.safepoints.get(id);
    if (!s) this.safepoints.set(id, (s = { startNs, endNs: startNs + durationNs, ttsNs: 0, operation: '', tid }));
    s.startNs = Math.min(s.startNs, startNs);
    s.endNs = Math.max(s.endNs, startNs + durationNs);
    if (type === 'jdk.SafepointStateSynchronization') s.ttsNs = durationNs;
    if (type === 'jdk.ExecuteVMOperation' && !s.operation) s.operation = c.str(v, 'operation') ?? '';
  }

  private events(): JavaGcEvent[] {
    const out: JavaGcEvent[] = [];
    const pooled = new Set<number>();
    for (const p of this.pauses) {
      const gc = this.gcs.get(p.gcId);
      const { collector, kind } = classify(MANAGER[gc?.name ?? ''] ?? gc?.name ?? '', p.name, false);
      const h = this.heap.get(p.gcId);
      const pools = h?.before !== undefined && h.after !== undefined && !pooled.has(p.gcId) ? [{ name: 'Java heap', usedBefore: h.before, usedAfter: h.after, committedAfter: h.committed ?? 0 }] : [];
      const eden = this.eden.get(p.gcId);
      if (pools.length && eden?.before !== undefined && eden.after !== undefined) pools.push({ name: eden.name, usedBefore: eden.before, usedAfter: eden.after, committedAfter: eden.committed ?? 0 });
      pooled.add(p.gcId);
      // a collection may pause more than once (G1's remark and cleanup): each pause gets the phases that ran inside it
      const phases = (this.phases.get(p.gcId) ?? []).filter((ph) => ph.startNs >= p.startNs && ph.startNs <= p.startNs + p.durationNs).map(({ name, durationNs }) => ({ name, durationNs }));
      out.push({ pid: this.pid, tid: p.tid, cpu: 0, timestampNs: p.startNs, durationNs: p.durationNs, collector, kind, operation: p.name, escalated: false, full: kind === 'full', pools, ...(phases.length ? { phases } : {}) });
    }
    for (const gc of this.gcs.values()) {
      const cycle = CYCLES[gc.name];
      if (cycle) out.push({ pid: this.pid, tid: gc.tid, cpu: 0, timestampNs: gc.startNs, durationNs: gc.durationNs, collector: cycle, kind: 'concurrent-cycle', operation: '', escalated: false, full: false, pools: [] });
    }
    return out.sort((a, b) => a.timestampNs - b.timestampNs);
  }

  result(): JavaGcResult {
    const sps: JavaSafepoint[] = [...this.safepoints.values()]
      .sort((a, b) => a.startNs - b.startNs)
      .map((s) => ({ pid: this.pid, tid: s.tid, timestampNs: s.startNs, timeToSafepointNs: s.ttsNs, durationNs: s.endNs - s.startNs, operation: s.operation }));
    return buildResult(this.pid ? [this.pid] : [], this.events(), 0, { available: sps.length > 0, ...(sps.length ? {} : { reason: 'the recording has no safepoint events' }), events: sps, lost: 0 });
  }
}
