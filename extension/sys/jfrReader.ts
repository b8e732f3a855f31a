// Reads a JFR recording for the editor in a worker thread (./jfrWorker.ts) with a heap limit and a
// timeout: the editor opens .jfr files on a double-click, also in Restricted Mode, so a hostile or
// huge recording costs a worker and a clear error, never the extension host's thread.
import path from 'node:path';
import { ImportError, LimitError, PROFILE_LIMITS, type ProfileLimitName } from '../model/readLimits';
import { JFR_LIMITS } from '../model/jfr/chunk';
import type { JfrReadResult, JfrWorkerMessage, JfrWorkerRequest } from './jfrWorker';
import { runBoundedWorker } from './boundedWorker';

export type { JfrReadResult } from './jfrWorker';

const GRACE_MS = 5_000;

/** One pass over `request.file` off this thread; `progress` sees the bytes read so far. */
export function readJfrInWorker(request: JfrWorkerRequest, progress?: (done: number, total: number) => void): Promise<JfrReadResult> {
  const name = path.basename(request.file);
  return runBoundedWorker<JfrWorkerMessage, JfrReadResult>({
    script: 'jfrWorker',
    workerData: request,
    heapMb: PROFILE_LIMITS.maxReaderHeapMb,
    timeoutMs: JFR_LIMITS.maxReadMs + GRACE_MS,
    onMessage: (m) => {
      if ('progress' in m) return void progress?.(m.progress.done, m.progress.total);
      if ('ok' in m) return { ok: m.ok };
      if (m.error.limit) return { error: new LimitError(m.error.limit as ProfileLimitName, `${name}: ${m.error.message}`) };
      return { error: m.error.importError ? new ImportError(`${name} is not a JFR recording we can read: ${m.error.message}`) : new Error(`reading ${name} failed: ${m.error.message}`) };
    },
    timedOut: () => new ImportError(`${name}: reading took longer than ${JFR_LIMITS.maxReadMs / 1000} s`),
    outOfMemory: () => LimitError.of('maxReaderHeapMb', PROFILE_LIMITS.maxReaderHeapMb, name, 'the memory needed to read it (MiB)'),
    crashed: (why) => new Error(`reading ${name} failed: ${why}`),
  });
}
