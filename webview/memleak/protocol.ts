// Messages between the memleak feature (extension/editor/features/memleak/memleak.ts) and the leak view.
import type { MemleakStack } from '../../extension/protocol/memleak';
import type { LeakLens } from '../../extension/model/leakSites';

export interface LeakViewStack extends MemleakStack {
  /** stable identity across updates (the frames' addresses) */
  key: string;
  /** bytes outstanding at each report so far, oldest first */
  history: number[];
  /** the workspace leak site ("file:line") of this stack, if any */
  site?: string;
  /** every workspace line of this stack ("file:line"), the allocation line first */
  lines?: string[];
}

export type ToView =
  | {
      type: 'snapshot';
      title: string;
      running: boolean;
      totalBytes: number;
      totalAllocations: number;
      dropped: number;
      stacks: LeakViewStack[];
      /** the workspace lines with a CodeLens: the allocation lines and their callers, inclusive figures */
      sites?: LeakLens[];
      /** present when sampled: every figure is an estimate (mean sampling interval in bytes) */
      sampleBytes?: number;
      /** the session shown: one panel shows each new session, and a reload must restore the last */
      sessionKey?: string;
    }
  | { type: 'focus'; site: string }
  | { type: 'cleared' };

export type FromView =
  | { type: 'ready' }
  | { type: 'openFrame'; file: string; line: number; column?: number }
  | { type: 'export'; format: 'json' | 'folded' }
  | { type: 'stop' };
