// Every tracer, by protocol name. Add one line per tracer.
import type { TracerName } from '../shared/protocol';
import type { AnyTracer } from './tracer';
import { selftestTracer } from './selftest';

export const tracers: Record<TracerName, AnyTracer> = {
  selftest: selftestTracer,
};

export function tracerByName(name: unknown): AnyTracer | undefined {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(tracers, name) ? tracers[name as TracerName] : undefined;
}
