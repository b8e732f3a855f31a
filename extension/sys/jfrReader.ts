// Reads a JFR recording for the editor in a worker thread (./jfrWorker.ts) with a heap limit and a
// timeout: the editor opens .jfr files on a double-click, also in Restricted Mode, so a hostile or
// huge recording costs a worker and a clear error, never the extension host's thread.
import path from 'node:path';
import { ImportError, LimitError, PROFILE_LIMITS, type ProfileLimitName } from '../model/readLimits';
import { JFR_LIMITS } from '../model/jfr/chunk';
import type { JfrReadResult, JfrWorkerMessage, JfrWorkerRequest } from './jfrWorker';
import { startWorker } from './profileReader';

export type { JfrReadResult } from './jfrWorker';

const GRACE_MS = 5_000;

/** One pass over `request.file` off this thread; `progress` sees the bytes read so far. */
export function readJfrInWorker(request: JfrWorkerRequest, progress?: (done: number, total: number) => void): Promise<JfrReadResult> {
  const name = path.basename(request.file);
  return new Promise((resolve, reject) => {
    const worker = startWorker('jfrWorker', { workerData: request, resourceLimits: { maxOldGenerationSizeMb: PROFILE_LIMITS.maxReaderHeapMb }, stdout: true, stderr: true });
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      f();
    };
    const timer = setTimeout(() => settle(() => reject(new ImportError(`${name}: reading took longer than ${JFR_LIMITS.maxReadMs / 1000} s`))), JFR_LIMITS.maxReadMs + GRACE_MS);
    worker.on('message', (m: JfrWorkerMessage) => {
      if ('progress' in m) return progress?.(m.progress.done, m.progress.total);
      settle(() => {
        if ('ok' in m) return resolve(m.ok);
        if (m.error.limit) return reject(new LimitError(m.error.limit as ProfileLimitName, `${name}: ${m.error.message}`));
        reject(m.error.importError ? new ImportError(`${name} is not a JFR recording we can read: ${m.error.message}`) : new Error(`reading ${name} failed: ${m.error.message}`));
      });
    });
    worker.once('error', (e: Error & { code?: string }) =>
      settle(() => reject(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? LimitError.of('maxReaderHeapMb', PROFILE_LIMITS.maxReaderHeapMb, name, 'the memory needed to read it (MiB)') : new Error(`reading ${name} failed: ${e.message}`))),
    );
    worker.once('exit', (code) => settle(() => reject(new Error(`reading ${name} failed: the reader stopped (exit code ${code})`))));
  });
}
