// Messages between the extension (features/profile.ts) and the flame-graph view (main.ts),
// one union per direction.
import type { FlameProfile } from '../../extension/model/flamegraph/profileData';

export type ToView =
  /** a profile to show (replaces the current one); live = a session is still sampling */
  /** unwind: one line on how stacks were unwound; unwindDetail: its tooltip (model/unwindText.ts) */
  | { type: 'profile'; profile: FlameProfile; title: string; warnings: string[]; unwind?: string; unwindDetail?: string; live?: boolean }
  /** the session is running: counters for the status line */
  | { type: 'progress'; samples: number; lost: number; elapsedMs: number; warnings?: string[] }
  | { type: 'status'; text: string; error?: boolean }
  /** a differential flame graph: widths from next, colours by the change from base (diffView.ts) */
  | { type: 'diff'; base: FlameProfile; next: FlameProfile; baseTitle: string; nextTitle: string; title: string };

export type FromView =
  | { type: 'ready' }
  /** open a source file at a 1-based line */
  | { type: 'openSource'; file: string; line: number }
  | { type: 'export'; format: 'folded' | 'speedscope' | 'pprof' }
  | { type: 'open' }
  | { type: 'stop' }
  /** the user dismissed a warning: not shown again */
  | { type: 'dismissWarning'; text: string };
