// The worker that reads one profile file for ./profileReader.ts (bundled as dist/profileWorker.js):
// the bytes come in workerData, the loaded profile or the reason it cannot be read goes back as
// one message. A file that still exhausts the worker's heap or time ends this thread, not the
// extension host or the CLI.
import { parentPort, workerData } from 'node:worker_threads';
import { loadProfileBytes } from './profileFile';
import { ImportError, LimitError, type ProfileLimits } from '../model/readLimits';

export interface WorkerRequest {
  bytes: Uint8Array;
  name: string;
  limits: ProfileLimits;
}

export type WorkerAnswer = { ok: ReturnType<typeof loadProfileBytes> } | { error: { message: string; limit?: string; importError: boolean } };

function answer(): WorkerAnswer {
  const { bytes, name, limits } = workerData as WorkerRequest;
  try {
    return { ok: loadProfileBytes(bytes, name, limits) };
  } catch (e) {
    const err = e as Error;
    return { error: { message: err.message, limit: e instanceof LimitError ? e.limit : undefined, importError: e instanceof ImportError } };
  }
}

parentPort?.postMessage(answer());
