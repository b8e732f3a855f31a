// Messages between the function-latency panel (extension/editor/features/latency.ts) and its view.
import type { LatencyUpdate } from '../../extension/protocol/latency';

export type ToView =
  | { type: 'init'; title: string; unit: 'us' | 'ms'; thresholdMs: number }
  | { type: 'update'; update: LatencyUpdate }
  | { type: 'ended'; reason: 'stopped' | 'target-exited' | 'error'; message?: string };

export type FromView = { type: 'ready' } | { type: 'stop' } | { type: 'openFrame'; file: string; line: number };
