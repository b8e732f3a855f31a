// Every tracer, by protocol name. Add one line per tracer; a kit tracer adds its line to ./kit.ts.
import type { TracerName } from '../protocol/protocol';
import type { AnyTracer } from './tracer';
import type { HistName, KitTracer } from './histTracer';
import * as kit from './kit';
import { selftestTracer } from './selftest/tracer';
import { javaGcTracer } from './javaGc/tracer';
import { memleakTracer } from './memleak/tracer';
import { profileTracer } from './profile/tracer';
import { offcpuTracer } from './offcpu/tracer';
import { bpfRunTracer } from './bpfRun/tracer';
import { jvmTracer } from './jvm/tracer';
import { javaHeapTracer } from './javaHeap/tracer';
import { javaLocksTracer } from './javaLocks/tracer';
import { latencyTracer } from './latency/tracer';

/** The kit tracers by catalog name: a catalog histogram tracer missing from ./kit.ts fails the type check here. */
export const kitTracers: { readonly [N in HistName]: KitTracer<N> } = kit;

export const tracers: Record<TracerName, AnyTracer> = {
  selftest: selftestTracer,
  ...kitTracers,
  'java-gc': javaGcTracer,
  memleak: memleakTracer,
  profile: profileTracer,
  offcpu: offcpuTracer,
  'bpf-run': bpfRunTracer,
  jvm: jvmTracer,
  'java-heap': javaHeapTracer,
  'java-locks': javaLocksTracer,
  latency: latencyTracer,
};

export function tracerByName(name: unknown): AnyTracer | undefined {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(tracers, name) ? tracers[name as TracerName] : undefined;
}
