// The worker that reads a JFR recording for ./jfrReader.ts (bundled as dist/jfrWorker.js): one
// pass over the file gives the event counts per type and, as asked, a profile of some event types,
// the GC document or the JVM timeline's; progress goes back as messages, then one answer. A
// recording that still exhausts the worker's heap ends this thread, never the extension host.
import { parentPort, workerData } from 'node:worker_threads';
import { readJfrFile, type JfrFileInfo } from './jfrFile';
import { JfrProfileBuilder } from '../model/jfr/profile';
import { JfrGcBuilder } from '../model/jfr/gc';
import { JfrTimelineBuilder } from '../model/jfr/timeline';
import { allOf, JfrSummaryBuilder, type JfrTypeCount } from '../model/jfr/summary';
import { ImportError, LimitError } from '../model/readLimits';
import type { EventVisitor } from '../model/jfr/chunk';
import type { ProfileResult } from '../protocol/profile';
import type { JavaGcResult } from '../protocol/javaGc';
import type { JvmResult } from '../protocol/jvm';

export interface JfrWorkerRequest {
  file: string;
  /** event types to make a profile of (none: no profile) */
  profile?: string[];
  gc?: boolean;
  /** the JVM timeline's document */
  timeline?: boolean;
}

export interface JfrReadResult {
  info: JfrFileInfo;
  types: JfrTypeCount[];
  stackTypes: string[];
  profile?: ProfileResult;
  gc?: JavaGcResult;
  timeline?: JvmResult;
}

export type JfrWorkerMessage = { progress: { done: number; total: number } } | { ok: JfrReadResult } | { error: { message: string; limit?: string; importError: boolean } };

function answer(): JfrWorkerMessage {
  const req = workerData as JfrWorkerRequest;
  try {
    const summary = new JfrSummaryBuilder();
    const profile = req.profile?.length ? new JfrProfileBuilder(req.profile, req.file) : undefined;
    const gc = req.gc ? new JfrGcBuilder() : undefined;
    const timeline = req.timeline ? new JfrTimelineBuilder(req.file) : undefined;
    const visitors: EventVisitor[] = [summary, ...(profile ? [profile] : []), ...(gc ? [gc] : []), ...(timeline ? [timeline] : [])];
    const info = readJfrFile(req.file, allOf(...visitors), { progress: (p) => parentPort?.postMessage({ progress: p } satisfies JfrWorkerMessage) });
    return { ok: { info, types: summary.types(), stackTypes: [...summary.stackTypes], ...(profile ? { profile: profile.result() } : {}), ...(gc ? { gc: gc.result() } : {}), ...(timeline ? { timeline: timeline.result() } : {}) } };
  } catch (e) {
    const err = e as Error;
    return { error: { message: err.message, limit: e instanceof LimitError ? e.limit : undefined, importError: e instanceof ImportError } };
  }
}

parentPort?.postMessage(answer());
