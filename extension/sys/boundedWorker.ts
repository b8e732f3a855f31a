// A file reader's worker thread with a heap limit and a timeout, settled once: the editor opens
// files on a double-click (also in Restricted Mode) and the CLI reads whatever it is given, so a
// hostile or huge input costs a worker and a clear error, never the caller's thread or process.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How a worker's run ends: its value, or the error to reject with. */
export type WorkerOutcome<T> = { ok: T } | { error: Error };

export interface BoundedWorker<M, T> {
  /** the worker's module: a name beside this file (dist/<name>.js in a bundle), or an absolute path without extension */
  script: string;
  workerData: unknown;
  /** the worker's old-generation heap limit */
  heapMb: number;
  /** the worker is stopped after this long */
  timeoutMs: number;
  /** a message from the worker: how the run ends, or undefined to keep waiting (progress) */
  onMessage(message: M): WorkerOutcome<T> | undefined;
  /** the errors of a run that ends without an answer */
  timedOut(): Error;
  outOfMemory(): Error;
  /** the worker threw or exited: `why` says which */
  crashed(why: string): Error;
}

/**
 * The worker's built module beside the bundle; from source (tests under tsx, which a worker does
 * not inherit) the .ts file, loaded through tsx's require hook.
 */
function startWorker(script: string, options: ConstructorParameters<typeof Worker>[1]): Worker {
  const base = path.isAbsolute(script) ? script : path.join(__dirname, script);
  if (fs.existsSync(`${base}.js`)) return new Worker(`${base}.js`, options);
  const load = (m: string) => `require(${JSON.stringify(m)});`;
  const tsx = createRequire(__filename).resolve('tsx/cjs');
  return new Worker(load(tsx) + load(`${base}.ts`), { ...options, eval: true });
}

/** Runs `w.script` in a worker until its answer, its heap limit, its timeout or its end, whichever comes first. */
export function runBoundedWorker<M, T>(w: BoundedWorker<M, T>): Promise<T> {
  return new Promise((resolve, reject) => {
    const worker = startWorker(w.script, { workerData: w.workerData, resourceLimits: { maxOldGenerationSizeMb: w.heapMb }, stdout: true, stderr: true });
    let settled = false;
    const settle = (end: WorkerOutcome<T>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      if ('ok' in end) resolve(end.ok);
      else reject(end.error);
    };
    const timer = setTimeout(() => settle({ error: w.timedOut() }), w.timeoutMs);
    worker.on('message', (m: M) => {
      if (settled) return;
      let end: WorkerOutcome<T> | undefined;
      try {
        end = w.onMessage(m);
      } catch (e) {
        end = { error: e as Error };
      }
      if (end) settle(end);
    });
    worker.once('error', (e: Error & { code?: string }) => settle({ error: e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? w.outOfMemory() : w.crashed(e.message) }));
    worker.once('exit', (code) => settle({ error: w.crashed(`the reader stopped (exit code ${code})`) }));
  });
}
