// Every tracer, by protocol name. Add one line per tracer.
import type { TracerName } from '../shared/protocol';
import type { AnyTracer } from './tracer';
import { selftestTracer } from './selftest';
import { runqlatTracer } from './runqlat';
import { javaGcTracer } from './javaGc';
import { memleakTracer } from './memleak';
import { profileTracer } from './profile';
import { bpfRunTracer } from './bpfRun';
import { jvmTracer } from './jvm';

export const tracers: Record<TracerName, AnyTracer> = {
  selftest: selftestTracer,
  runqlat: runqlatTracer,
  'java-gc': javaGcTracer,
  memleak: memleakTracer,
  profile: profileTracer,
  'bpf-run': bpfRunTracer,
  jvm: jvmTracer,
};

export function tracerByName(name: unknown): AnyTracer | undefined {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(tracers, name) ? tracers[name as TracerName] : undefined;
}
