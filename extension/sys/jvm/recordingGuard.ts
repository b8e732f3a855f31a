// Starts the guard (./jfrGuard.ts) of a JFR recording of ours: if this process dies without
// ending the recording, the guard ends it. The guard is its own process (a new session, so a
// Ctrl-C meant for us does not reach it), bundled beside us as jfrGuard.js; under tsx (tests)
// it runs from source.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { identify } from '../proc/processes';

export interface RecordingGuard {
  /** the recording was ended by us: the guard leaves without touching it */
  release(): void;
}

function guardCommand(): string[] | undefined {
  const base = path.join(__dirname, 'jfrGuard');
  if (fs.existsSync(`${base}.js`)) return [`${base}.js`];
  if (!fs.existsSync(`${base}.ts`)) return undefined;
  return ['--require', createRequire(__filename).resolve('tsx/cjs'), `${base}.ts`];
}

/**
 * Guards recording `name` of JVM `pid`. Without the guard's file (a partial build) the recording
 * is unguarded and `log` says so: the session itself still ends it on every path it controls.
 */
export function guardRecording(pid: number, name: string, log: (s: string) => void): RecordingGuard {
  const cmd = guardCommand();
  const id = identify(pid);
  if (!cmd || !id) {
    if (!cmd) log(`JFR recording ${name}: no jfrGuard.js beside ${__dirname}, so a killed session would leave it running in pid ${pid}`);
    return { release() {} };
  }
  const child = spawn(process.execPath, [...cmd, String(pid), String(id.startTime), name], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
    // the editor's runtime is Electron: run as plain node
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
  });
  child.on('error', (e) => log(`JFR recording ${name}: its guard did not start (${e.message})`));
  child.stdin!.on('error', () => undefined);
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      child.stdin!.end('done\n');
    },
  };
}
