// Reads a profile file's bytes in a worker thread (./profileWorker.ts) with a heap limit and a
// timeout: the editor opens profile files without asking (custom editors, also in Restricted
// Mode) and the CLI reads whatever it is given, so even a file that gets past every count of
// PROFILE_LIMITS costs a worker, never the extension host's thread or the process.
import fs from 'node:fs';
import path from 'node:path';
import { ImportError, LimitError, PROFILE_LIMITS, type ProfileLimitName, type ProfileLimits } from '../model/readLimits';
import { runBoundedWorker } from './boundedWorker';
import type { LoadedProfile } from './profileFile';
import type { WorkerAnswer, WorkerRequest } from './profileWorker';

/** Time for what the budget does not count (JSON.parse, gunzip, the copy back) before the worker is stopped. */
const GRACE_MS = 5_000;

const limitError = (limit: ProfileLimitName, max: number, name: string, what: string) => LimitError.of(limit, max, name, what);

/** Any profile file's bytes as a flame profile, read off this thread within `limits`. */
export function readProfile(bytes: Uint8Array, name: string, limits: ProfileLimits = PROFILE_LIMITS): Promise<LoadedProfile> {
  if (bytes.length > limits.maxFileBytes) return Promise.reject(limitError('maxFileBytes', limits.maxFileBytes, name, `the size of the file (${bytes.length.toLocaleString('en-US')})`));
  const request: WorkerRequest = { bytes, name, limits };
  return runBoundedWorker<WorkerAnswer, LoadedProfile>({
    script: 'profileWorker',
    workerData: request,
    heapMb: limits.maxReaderHeapMb,
    timeoutMs: limits.maxReadMs + GRACE_MS,
    onMessage: (a) => {
      if ('ok' in a) return { ok: a.ok };
      if (a.error.limit) return { error: new LimitError(a.error.limit as ProfileLimitName, a.error.message) };
      return { error: a.error.importError ? new ImportError(a.error.message) : new Error(`reading ${name} failed: ${a.error.message}`) };
    },
    timedOut: () => limitError('maxReadMs', limits.maxReadMs, name, 'the time spent reading (ms)'),
    outOfMemory: () => limitError('maxReaderHeapMb', limits.maxReaderHeapMb, name, 'the memory needed to read it (MiB)'),
    crashed: (why) => new Error(`reading ${name} failed: ${why}`),
  });
}

/** A file by path: its size is checked before it is read. */
export async function readProfilePath(file: string, limits: ProfileLimits = PROFILE_LIMITS): Promise<LoadedProfile> {
  const name = path.basename(file);
  const size = (await fs.promises.stat(file)).size;
  if (size > limits.maxFileBytes) throw limitError('maxFileBytes', limits.maxFileBytes, name, `the size of the file (${size.toLocaleString('en-US')})`);
  return readProfile(await fs.promises.readFile(file), name, limits);
}
