// Messages between "Run BPF Program" (extension/editor/features/bpf/bpfRun.ts) and its map view: one union
// per direction, string-literal `type` tags.
import type { BpfRunUpdate, ProgramState } from '../../extension/protocol/bpfRun';

export type ToView =
  /** once the view said `ready`: what runs */
  | { type: 'init'; object: string; programs: ProgramState[]; warnings: string[] }
  /** every map's current contents */
  | { type: 'update'; update: BpfRunUpdate }
  /** the programs were detached; the last contents stay */
  | { type: 'ended'; reason: 'stopped' | 'target-exited' | 'error'; message?: string };

export type FromView = { type: 'ready' } | { type: 'stop' };
