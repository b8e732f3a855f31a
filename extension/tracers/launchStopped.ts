// Starts a command held in SIGSTOP before its exec (native/src/launch.c), so probes can be
// attached to its pid before its first instruction; the caller resumes it with SIGCONT.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { inputError, StudioError } from '../protocol/errors';
import type { MemleakLaunch } from '../protocol/memleak';
import { readStat } from '../sys/proc/processes';
import { launchIdentity } from '../sys/identity';

export function launcherPath(assetDir: string): string {
  const candidates = [path.join(assetDir, 'ebpf-studio-launch'), path.resolve(assetDir, '..', 'native', 'build', 'Release', 'ebpf-studio-launch')];
  const found = candidates.find((f) => fs.existsSync(f));
  if (!found) throw new StudioError('internal', `the launcher is missing (looked for ${candidates.join(', ')}): run "npm run build"`);
  return found;
}

/** Finds argv[0] the way execvp will, so a typo is reported before anything starts. */
export function resolveCommand(cmd: string, envPath: string | undefined, cwd: string): string {
  const isExec = (f: string) => {
    try {
      const st = fs.statSync(f);
      if (!st.isFile()) return false;
      fs.accessSync(f, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (cmd.includes('/')) {
    const f = path.resolve(cwd, cmd);
    if (!isExec(f)) throw inputError(`cannot run ${cmd}: ${fs.existsSync(f) ? 'it is not an executable file (chmod +x?)' : 'no such file'}`);
    return f;
  }
  for (const dir of (envPath ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    const f = path.join(dir || '.', cmd);
    if (isExec(f)) return f;
  }
  throw inputError(`cannot run ${cmd}: not found in PATH (give a path, e.g. ./${cmd})`);
}

export interface StoppedChild {
  child: ChildProcess;
  pid: number;
  /** the program execvp will run */
  exe: string;
  /** resolves with how the program ended */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function launchStopped(assetDir: string, launch: MemleakLaunch, onOutput: (text: string) => void): Promise<StoppedChild> {
  const cwd = launch.cwd ?? process.cwd();
  if (!fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) throw inputError(`the working directory ${cwd} does not exist`);
  const env = { ...process.env, ...(launch.env ?? {}) };
  const exe = resolveCommand(launch.command[0], env.PATH, cwd);
  // Who the command runs as is the helper's decision (extension/sys/identity.ts), never the request's.
  const { uid, gid } = launchIdentity(launch);
  const stdio: StdioOptions = launch.output === 'inherit' ? 'inherit' : launch.output === 'stderr' ? ['inherit', 2, 2] : ['ignore', 'pipe', 'pipe'];
  // The launcher enters cwd itself, after libuv dropped to uid/gid (libuv would chdir as root).
  const child = spawn(launcherPath(assetDir), ['--cwd', cwd, '--', ...launch.command], { cwd: '/', env, stdio, uid, gid });
  child.stdout?.on('data', (d: Buffer) => onOutput(d.toString()));
  child.stderr?.on('data', (d: Buffer) => onOutput(d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const spawnError = new Promise<never>((_, reject) => child.once('error', (e) => reject(new StudioError('internal', `cannot start the launcher: ${e.message}`))));
  const pid = child.pid;
  if (!pid) return spawnError;
  // The launcher raises SIGSTOP first thing; /proc/PID/stat shows "T" once it has.
  const deadline = Date.now() + 5000;
  for (;;) {
    const st = readStat(pid);
    if (st?.state === 'T') break;
    if (!st || st.state === 'Z' || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new StudioError('internal', `the launcher (pid ${pid}) did not stop itself within 5 s (state ${st?.state ?? 'gone'})`);
    }
    await Promise.race([new Promise((r) => setTimeout(r, 2)), spawnError]);
  }
  return { child, pid, exe, exited };
}
