// Runs the helper install script (extension/privilege/installPlan.ts) as root with one authentication:
// directly when already root, else `pkexec /bin/sh -c`, `sudo -n /bin/sh -c`, or `sudo -S` with
// the password on stdin. Root runs /bin/sh and coreutils only, never a file the user can write.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chooseNode, installPlan, type InstallPlan } from './installPlan';
import { untrustedReason } from './trustedPath';
import { which } from './launch';

export function planForDist(distDir: string, nodeSetting = ''): InstallPlan {
  const pkg = JSON.parse(fs.readFileSync(path.join(distDir, '..', 'package.json'), 'utf8')) as { version: string };
  const node = chooseNode([nodeSetting, '/usr/bin/node', '/usr/local/bin/node'], process.execPath, Boolean(process.versions.electron), (f) => untrustedReason(f) === undefined);
  return installPlan(distDir, pkg.version, node);
}

export interface RootRun {
  command: string;
  args: string[];
  /** write this line on stdin first (sudo -S) */
  password?: string;
}

export function rootRun(script: string, how: { euid: number; pkexec?: string; hasDisplay: boolean; sudo?: string; sudoNonInteractive: boolean; password?: string }): RootRun {
  if (how.euid === 0) return { command: '/bin/sh', args: ['-c', script] };
  if (how.pkexec && how.hasDisplay) return { command: how.pkexec, args: ['/bin/sh', '-c', script] };
  if (how.sudo && how.sudoNonInteractive) return { command: how.sudo, args: ['-n', '/bin/sh', '-c', script] };
  if (how.sudo && how.password !== undefined) return { command: how.sudo, args: ['-S', '-k', '-p', '', '/bin/sh', '-c', script], password: how.password };
  throw new Error('installing the helper needs root: run the editor as root, or install sudo (apt-get install sudo) or pkexec');
}

export function runAsRoot(r: RootRun): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(r.command, r.args, { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.stdin.on('error', () => undefined);
    child.stdin.end(r.password !== undefined ? `${r.password}\n` : '');
    child.once('error', (e) => resolve({ code: null, output: e.message }));
    child.once('exit', (code) => resolve({ code, output: output.trim() }));
  });
}

export { which };
