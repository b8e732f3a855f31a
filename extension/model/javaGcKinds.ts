// Which memory manager ran a collection and what kind it was, in the JVM's own terms. The BPF
// side names the manager when a pool probe fired inside the pause; pauses without one (G1
// Remark/Cleanup, every ZGC and Shenandoah pause) are named from the VM operation running them.
// Pure: unit-tested against the names measured on OpenJDK 17 (see bpf/java-gc.bpf.c).
import type { JavaGcKind } from '../protocol/javaGc';

const YOUNG = new Set(['Copy', 'PS Scavenge', 'G1 Young Generation', 'ParNew', 'ZGC Minor Pauses']);
const FULL = new Set(['MarkSweepCompact', 'PS MarkSweep', 'G1 Old Generation', 'ConcurrentMarkSweep']);
const CONCURRENT_PAUSES = new Set(['G1 Concurrent GC', 'ZGC Pauses', 'Shenandoah Pauses', 'ZGC Major Pauses', 'ZGC Minor Pauses']);

/** The manager of a pause that fired no pool probe, from its VM operation. */
export function managerOfOperation(operation: string): string {
  if (/^G1/.test(operation)) return 'G1 Concurrent GC';
  if (/^Z/.test(operation)) return 'ZGC Pauses';
  if (/^Shenandoah/.test(operation)) return 'Shenandoah Pauses';
  return '';
}

export function classify(manager: string, operation: string, cycle: boolean): { collector: string; kind: JavaGcKind } {
  if (cycle) return { collector: manager || 'concurrent cycle', kind: 'concurrent-cycle' };
  const collector = manager || managerOfOperation(operation) || 'unknown';
  if (YOUNG.has(collector)) return { collector, kind: collector === 'ZGC Minor Pauses' ? 'concurrent-pause' : 'young' };
  if (FULL.has(collector)) return { collector, kind: 'full' };
  if (/Cycles$/.test(collector)) return { collector, kind: 'concurrent-cycle' };
  if (CONCURRENT_PAUSES.has(collector)) {
    if (/Full GC/.test(operation)) return { collector, kind: 'full' };
    if (/Degenerated/.test(operation)) return { collector, kind: 'degenerated' };
    return { collector, kind: 'concurrent-pause' };
  }
  return { collector, kind: 'pause' };
}

/** Collections that stop the application: everything but a concurrent cycle. */
export function isPause(kind: JavaGcKind): boolean {
  return kind !== 'concurrent-cycle';
}
