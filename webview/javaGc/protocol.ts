// Messages between the Java GC feature (extension/editor/features/javaGc.ts) and its webview: one
// union per direction, string-literal `type` tags.
import type { JavaGcUpdate } from '../../extension/protocol/javaGc';
import type { GcLiveState } from '../../extension/model/javaGcLive';

export type SessionState = 'running' | 'stopped' | 'target-exited' | 'error';

export type ToView =
  /** sent once the view said `ready`: what is traced */
  | { type: 'init'; target: string }
  /** live data (events are new since the previous update) */
  | { type: 'update'; update: JavaGcUpdate }
  /** the figures so far, kept by the extension (a reopened or restored view); updates follow */
  | { type: 'restore'; state: GcLiveState }
  /** the session ended; data stays and export keeps working */
  | { type: 'ended'; reason: Exclude<SessionState, 'running'>; message?: string }
  /** the outcome of an export request, shown in the status line */
  | { type: 'exported'; file?: string; error?: string };

export type FromView =
  | { type: 'ready' }
  | { type: 'stop' }
  /** export what the view shows: the view renders the file content, the extension asks where to save it */
  | { type: 'export'; format: 'json' | 'csv'; content: string };
