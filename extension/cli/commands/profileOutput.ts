// What `profile` prints and writes for every event (CPU samples, off-CPU and wall time): folded
// stacks or the event's text summary on stdout, and with --pprof the gzipped profile.proto, whose
// sample types follow the document's unit (samples, or µs of off-CPU / wall time).
import fs from 'node:fs';
import path from 'node:path';
import type { Io } from '../command';
import { inputError } from '../../protocol/errors';
import { encodePprofGz } from '../../sys/profileFile';
import type { ProfileResult } from '../../protocol/profile';
import { fromProfileResult } from '../../model/flamegraph/profileData';
import { toFolded } from '../../model/flamegraph/formats';

/** formatResult and onResult of a profile run; startMs: when the run began (pprof's time and duration). */
export function profileOutputs(o: { folded: boolean; pid: number | undefined; pprofFile: string | undefined; startMs: number; summary: (r: ProfileResult) => string }) {
  return {
    // --all roots every stack by process, even when only one process ran while sampled.
    formatResult: (r: ProfileResult) => (o.folded ? toFolded(fromProfileResult(r, { groupByProcess: o.pid === undefined })).trimEnd() : o.summary(r)),
    onResult: (r: ProfileResult, io: Io) => {
      if (!o.pprofFile) return;
      try {
        fs.writeFileSync(o.pprofFile, encodePprofGz(r, { startMs: o.startMs, durationMs: Date.now() - o.startMs }));
      } catch (e) {
        throw inputError(`cannot write ${o.pprofFile}: ${(e as Error).message}`);
      }
      const what = r.unit === 'us' ? `${r.stacks.length} stacks (${r.event === 'wall' ? 'wall' : 'off_cpu'}/microseconds)` : `${r.samples} samples`;
      io.err(`wrote ${what} to ${o.pprofFile} (pprof: go tool pprof -top ${o.pprofFile})`);
    },
  };
}

/**
 * Fails before tracing when an output file (`--pprof FILE`) could not be written afterwards:
 * its folder is missing or not writable, or it is a folder. `example` names a file for the hint.
 */
export function checkOutputFile(file: string, flag: string, example = 'cpu.pb.gz'): string {
  const abs = path.resolve(file);
  const dir = path.dirname(abs);
  if (!fs.existsSync(dir)) throw inputError(`${flag} ${file}: the folder ${dir} does not exist; create it or choose another path`);
  if (fs.existsSync(abs) && fs.statSync(abs).isDirectory()) throw inputError(`${flag} ${file} is a folder: give a file name, e.g. ${path.join(file, example)}`);
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    throw inputError(`${flag} ${file}: the folder ${dir} is not writable; choose another path`);
  }
  return abs;
}
