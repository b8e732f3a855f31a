// Messages between a log2-histogram tracer's live panel (extension/editor/sessions/liveHistogram.ts)
// and its latency view: one union per direction, string-literal `type` tags.
import type { HistUnit, HistUpdate } from '../../extension/protocol/histogram';
import type { HistLiveState } from '../../extension/model/histLive';

export type SessionState = 'running' | 'stopped' | 'target-exited' | 'error';

export type ToView =
  /** sent once the view said `ready`: which tracer (its nouns), what is traced and how */
  | { type: 'init'; tracer: string; scope: string; per: string; unit: HistUnit }
  /** one interval's data (histograms are of that interval only) */
  | { type: 'update'; update: HistUpdate }
  /** the figures so far, kept by the extension (a reopened or restored view); updates follow */
  | { type: 'restore'; state: HistLiveState }
  /** the session ended; data stays and export keeps working */
  | { type: 'ended'; reason: Exclude<SessionState, 'running'>; message?: string }
  /** the outcome of an export request, shown in the status line */
  | { type: 'exported'; file?: string; error?: string };

export type FromView =
  | { type: 'ready' }
  | { type: 'stop' }
  /** export what the view holds (a HistResult document); the extension asks where to save it */
  | { type: 'export'; content: string };
