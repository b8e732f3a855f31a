// Reads a profile file's bytes in a worker thread (./profileWorker.ts) with a heap limit and a
// timeout: the editor opens profile files without asking (custom editors, also in Restricted
// Mode) and the CLI reads whatever it is given, so even a file that gets past every count of
// PROFILE_LIMITS costs a worker, never the extension host's thread or the process.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { ImportError, LimitError, PROFILE_LIMITS, type ProfileLimitName, type ProfileLimits } from '../model/readLimits';
import type { LoadedProfile } from './profileFile';
import type { WorkerAnswer, WorkerRequest } from './profileWorker';

/** Time for what the budget does not count (JSON.parse, gunzip, the copy back) before the worker is stopped. */
const GRACE_MS = 5_000;

/**
 * dist/profileWorker.js beside the bundle; from source (tests under tsx, which a worker does not
 * inherit) the source beside this file, loaded through tsx's require hook.
 */
export function startWorker(name: 'profileWorker' | 'jfrWorker', options: WorkerOptions): Worker {
  const js = path.join(__dirname, `${name}.js`);
  if (fs.existsSync(js)) return new Worker(js, options);
  const load = (m: string) => `require(${JSON.stringify(m)});`;
  const tsx = createRequire(__filename).resolve('tsx/cjs');
  return new Worker(load(tsx) + load(path.join(__dirname, `${name}.ts`)), { ...options, eval: true });
}

const limitError = (limit: ProfileLimitName, max: number, name: string, what: string) => LimitError.of(limit, max, name, what);

/** Any profile file's bytes as a flame profile, read off this thread within `limits`. */
export function readProfile(bytes: Uint8Array, name: string, limits: ProfileLimits = PROFILE_LIMITS): Promise<LoadedProfile> {
  if (bytes.length > limits.maxFileBytes) return Promise.reject(limitError('maxFileBytes', limits.maxFileBytes, name, `the size of the file (${bytes.length.toLocaleString('en-US')})`));
  return new Promise((resolve, reject) => {
    const request: WorkerRequest = { bytes, name, limits };
    const worker = startWorker('profileWorker', { workerData: request, resourceLimits: { maxOldGenerationSizeMb: limits.maxReaderHeapMb }, stdout: true, stderr: true });
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      f();
    };
    const timer = setTimeout(() => settle(() => reject(limitError('maxReadMs', limits.maxReadMs, name, 'the time spent reading (ms)'))), limits.maxReadMs + GRACE_MS);
    worker.once('message', (a: WorkerAnswer) =>
      settle(() => {
        if ('ok' in a) return resolve(a.ok);
        if (a.error.limit) return reject(new LimitError(a.error.limit as ProfileLimitName, a.error.message));
        reject(a.error.importError ? new ImportError(a.error.message) : new Error(`reading ${name} failed: ${a.error.message}`));
      }),
    );
    worker.once('error', (e: Error & { code?: string }) =>
      settle(() => reject(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? limitError('maxReaderHeapMb', limits.maxReaderHeapMb, name, 'the memory needed to read it (MiB)') : new Error(`reading ${name} failed: ${e.message}`))),
    );
    worker.once('exit', (code) => settle(() => reject(new Error(`reading ${name} failed: the reader stopped (exit code ${code})`))));
  });
}

/** A file by path: its size is checked before it is read. */
export async function readProfilePath(file: string, limits: ProfileLimits = PROFILE_LIMITS): Promise<LoadedProfile> {
  const name = path.basename(file);
  const size = (await fs.promises.stat(file)).size;
  if (size > limits.maxFileBytes) throw limitError('maxFileBytes', limits.maxFileBytes, name, `the size of the file (${size.toLocaleString('en-US')})`);
  return readProfile(await fs.promises.readFile(file), name, limits);
}
