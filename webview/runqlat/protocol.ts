// Messages between the run-queue latency feature (extension/editor/features/runqlat.ts) and its
// webview: one union per direction, string-literal `type` tags.
import type { RunqlatPer, RunqlatUnit, RunqlatUpdate } from '../../extension/protocol/runqlat';
import type { RunqlatLiveState } from '../../extension/model/runqlatLive';

export type SessionState = 'running' | 'stopped' | 'target-exited' | 'error';

export type ToView =
  /** sent once the view said `ready`: what is traced and how */
  | { type: 'init'; scope: string; per: RunqlatPer; unit: RunqlatUnit }
  /** one interval's data (histograms are of that interval only) */
  | { type: 'update'; update: RunqlatUpdate }
  /** the figures so far, kept by the extension (a reopened or restored view); updates follow */
  | { type: 'restore'; state: RunqlatLiveState }
  /** the session ended; data stays and export keeps working */
  | { type: 'ended'; reason: Exclude<SessionState, 'running'>; message?: string }
  /** the outcome of an export request, shown in the status line */
  | { type: 'exported'; file?: string; error?: string };

export type FromView =
  | { type: 'ready' }
  | { type: 'stop' }
  /** export what the view holds (a RunqlatResult document); the extension asks where to save it */
  | { type: 'export'; content: string };
