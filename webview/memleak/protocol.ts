// Messages between the memleak feature (extension/editor/features/memleak/memleak.ts) and the leak view.
import type { LeakSnapshot, LeakViewStack } from '../../extension/model/leakSites';

export type { LeakViewStack };

export type ToView =
  | LeakSnapshot
  | { type: 'focus'; site: string }
  | { type: 'cleared' };

export type FromView =
  | { type: 'ready' }
  | { type: 'openFrame'; file: string; line: number; column?: number }
  | { type: 'export'; format: 'json' | 'folded' }
  | { type: 'stop' };
