// An allocation profile as pprof, shaped like Go's heap profiles: sample types alloc_objects/count
// and alloc_space/bytes, the period type space/bytes with the sampling interval as the period, so
// `go tool pprof -sample_index=alloc_space` reads it as it reads Go's. The locations, functions and
// mappings are the CPU encoder's (./pprof.ts); only the sample types and values differ.
// Pure: no node modules.
import { Profile, ValueType } from 'pprof-format';
import type { ProfileResult } from '../protocol/profile';
import { toPprof, type PprofOptions } from './pprof';

export function toAllocPprof(r: ProfileResult, intervalBytes: number, opts: PprofOptions = {}): Uint8Array {
  // toPprof writes one sample per stack with count > 0, in the stacks' order
  const kept = r.stacks.filter((s) => s.count > 0);
  const p = Profile.decode(toPprof(r, opts));
  const s = (x: string) => p.stringTable.dedup(x);
  p.sampleType = [new ValueType({ type: s('alloc_objects'), unit: s('count') }), new ValueType({ type: s('alloc_space'), unit: s('bytes') })];
  p.periodType = new ValueType({ type: s('space'), unit: s('bytes') });
  p.period = intervalBytes;
  p.defaultSampleType = s('alloc_space');
  p.sample.forEach((sample, i) => {
    sample.value = [kept[i].count, kept[i].value ?? 0];
  });
  p.comment = [s(`ebpf-studio profile --event alloc: ${r.samples} sampled allocations, one every ~${intervalBytes} bytes; values are unbiased estimates`)];
  return p.encode();
}
