// Messages between the function-latency panel (extension/editor/features/latency.ts) and its view.
import type { LatencyUpdate } from '../../extension/protocol/latency';

export type ToView =
  /** profiling: this session profiles its slow calls (the flame graph opens when it ends) */
  | { type: 'init'; title: string; unit: 'us' | 'ms'; thresholdMs: number; profiling?: boolean; byCaller?: boolean }
  | { type: 'update'; update: LatencyUpdate }
  | { type: 'ended'; reason: 'stopped' | 'target-exited' | 'error'; message?: string };

/** profileSlow: measure again with the slow calls' wall-clock profile (opened as a flame graph at the end) */
/** byCaller: measure again split by caller */
export type FromView = { type: 'ready' } | { type: 'stop' } | { type: 'profileSlow' } | { type: 'byCaller' } | { type: 'openFrame'; file: string; line: number };
