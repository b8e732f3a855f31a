// Every tracer, by protocol name. Add one line per tracer.
import type { TracerName } from '../protocol/protocol';
import type { AnyTracer } from './tracer';
import { selftestTracer } from './selftest/tracer';
import { runqlatTracer } from './runqlat/tracer';
import { biolatencyTracer } from './biolatency';
import { cpudistTracer } from './cpudist';
import { tcplatTracer } from './tcplat';
import { javaGcTracer } from './javaGc/tracer';
import { memleakTracer } from './memleak/tracer';
import { profileTracer } from './profile/tracer';
import { offcpuTracer } from './offcpu/tracer';
import { bpfRunTracer } from './bpfRun/tracer';
import { jvmTracer } from './jvm/tracer';
import { javaHeapTracer } from './javaHeap/tracer';
import { javaLocksTracer } from './javaLocks/tracer';

export const tracers: Record<TracerName, AnyTracer> = {
  selftest: selftestTracer,
  runqlat: runqlatTracer,
  biolatency: biolatencyTracer,
  cpudist: cpudistTracer,
  tcplat: tcplatTracer,
  'java-gc': javaGcTracer,
  memleak: memleakTracer,
  profile: profileTracer,
  offcpu: offcpuTracer,
  'bpf-run': bpfRunTracer,
  jvm: jvmTracer,
  'java-heap': javaHeapTracer,
  'java-locks': javaLocksTracer,
};

export function tracerByName(name: unknown): AnyTracer | undefined {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(tracers, name) ? tracers[name as TracerName] : undefined;
}
