// Messages between the JVM timeline feature (extension/editor/features/jvmTimeline.ts) and its webview:
// one union per direction, string-literal `type` tags.
import type { JvmResult, JvmUpdate } from '../../extension/model/jvmTimeline';

export type ToView =
  /** sent once the view said `ready`: what is traced */
  | { type: 'init'; target: string }
  /** live data since the previous update */
  | { type: 'update'; update: JvmUpdate }
  /** the session ended; `result` (symbolized stacks) replaces what streamed */
  | { type: 'ended'; reason: 'stopped' | 'target-exited' | 'error'; message?: string; result?: JvmResult }
  /** a session read from a file, or a panel brought back by a reload (`ended`: it was live, and how it ended) */
  | { type: 'load'; result: JvmResult; name: string; ended?: { reason: 'stopped' | 'target-exited' | 'error'; message?: string } }
  /** the outcome of an export or import request, shown in the status line */
  | { type: 'note'; text: string; error?: boolean };

export type FromView =
  | { type: 'ready' }
  | { type: 'stop' }
  /** export the whole session (the view builds the session file) */
  | { type: 'export'; content: string }
  | { type: 'import' }
  /** the selection changed (tests and the status line read it) */
  | { type: 'selected'; startS: number; endS: number; samples: number; gcs: number };
