// The bed every attack file stands on: a throwaway unprivileged user (useradd), a root-owned
// install of the helper made by the same script "eBPF: Install Privileged Helper" runs, root's
// files the attacks aim at (fingerprinted before and after), and ways to act as that user: run a
// command, start the installed helper as sudo would for them, own a folder.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { chooseNode, installPlan } from '../../extension/privilege/installPlan';
import { untrustedReason } from '../../extension/privilege/trustedPath';
import { distDir, kernelSkipReason } from '../helpers';

/** Why attack tests cannot run here (beyond kernelSkipReason), or undefined. */
export function attackSkipReason(tools: string[] = []): string | undefined {
  if (process.geteuid?.() !== 0) return 'needs root: it creates an unprivileged user and a root-owned install';
  for (const tool of ['useradd', 'userdel', 'setpriv', ...tools]) if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is missing`;
  return kernelSkipReason();
}

export interface AttackUser {
  name: string;
  uid: number;
  gid: number;
  created: boolean;
}

/** A user with no home and no shell (made unless it exists); `remove()` deletes what was made. */
export function makeUser(name: string): AttackUser {
  const created = spawnSync('id', [name]).status !== 0;
  if (created) {
    const r = spawnSync('useradd', ['-M', '-U', '-d', '/nonexistent', '-s', '/usr/sbin/nologin', name], { encoding: 'utf8' });
    assert.equal(r.status, 0, `useradd ${name}: ${r.stderr}`);
  }
  const id = (flag: string) => Number(spawnSync('id', [flag, name], { encoding: 'utf8' }).stdout.trim());
  return { name, uid: id('-u'), gid: id('-g'), created };
}

export function removeUser(u: AttackUser | undefined): void {
  if (u?.created) spawnSync('userdel', [u.name]);
}

export type Helper = ReturnType<typeof startInstalledHelper>;

/** The installed helper, started as sudo would start it for `u` (SUDO_UID/SUDO_GID through the root-owned launcher). */
export function startInstalledHelper(launcher: string, u: AttackUser, children: ChildProcess[] = []) {
  const child = spawn(launcher, [], { stdio: ['pipe', 'pipe', 'pipe'], env: { SUDO_UID: String(u.uid), SUDO_GID: String(u.gid), PATH: '/usr/bin:/bin' } });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const notes: unknown[] = [];
  conn.onNotification((method: string, params: unknown) => void notes.push({ method, params }));
  conn.listen();
  return {
    conn,
    notes,
    child,
    stderr: () => stderr,
    async close() {
      conn.dispose();
      child.stdin.end();
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    },
  };
}

/** Runs a command as `u` with no supplementary groups. */
export function asUser(u: AttackUser, cmd: string[], opts: { cwd?: string; input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}) {
  return spawnSync('setpriv', [`--reuid=${u.uid}`, `--regid=${u.gid}`, '--clear-groups', '--', ...cmd], {
    encoding: 'utf8',
    cwd: opts.cwd ?? '/',
    input: opts.input,
    timeout: opts.timeoutMs ?? 60_000,
    maxBuffer: 64 << 20,
    env: opts.env ?? { PATH: '/usr/bin:/bin', HOME: '/' },
  });
}

/** Starts a command as `u` in the background. */
export function spawnAsUser(u: AttackUser, cmd: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}, children: ChildProcess[] = []): ChildProcess {
  const child = spawn('setpriv', [`--reuid=${u.uid}`, `--regid=${u.gid}`, '--clear-groups', '--', ...cmd], {
    cwd: opts.cwd ?? '/',
    stdio: ['pipe', 'pipe', 'pipe'],
    env: opts.env ?? { PATH: '/usr/bin:/bin', HOME: '/' },
  });
  children.push(child);
  return child;
}

/**
 * A root-owned 0755 folder under /var/tmp holding: `root-only/` (0700, root's files the attacks
 * aim at), the install (`lib/`, made by installPlan's script, with `launcher` and
 * `runnerLauncher`), and folders made for the user on request.
 */
export class AttackBed {
  readonly base: string;
  readonly installRoot: string;
  readonly launcher: string;
  readonly runnerLauncher: string;
  readonly children: ChildProcess[] = [];
  private readonly victims: string[] = [];

  constructor(prefix: string) {
    // Outside /tmp: a chrooted target's /tmp may point at a root folder the user cannot write.
    this.base = fs.mkdtempSync(path.join('/var/tmp', `ebpf-studio-${prefix}-`));
    fs.chmodSync(this.base, 0o755);
    fs.mkdirSync(path.join(this.base, 'root-only'), { mode: 0o700 });
    this.installRoot = path.join(this.base, 'lib');
    const node = chooseNode(['/usr/bin/node', '/usr/local/bin/node'], process.execPath, false, (f) => untrustedReason(f) === undefined);
    const plan = installPlan(distDir, '9.9.9-attack', node, { root: this.installRoot, policy: path.join(this.base, 'actions', 'dev.ebpfstudio.helper.run.policy') });
    const inst = spawnSync('/bin/sh', ['-c', plan.script], { encoding: 'utf8' });
    assert.equal(inst.status, 0, inst.stderr + inst.stdout);
    this.launcher = path.join(this.installRoot, 'ebpf-studio-helper');
    this.runnerLauncher = path.join(this.installRoot, 'ebpf-studio-runner');
  }

  /** A root-only file (mode as given, in a 0700 folder) the attacks try to change, read or delete. */
  victim(name: string, content: string | Buffer, mode = 0o600): string {
    const f = path.join(this.base, 'root-only', name);
    fs.writeFileSync(f, content, { mode });
    this.victims.push(f);
    return f;
  }

  /** Adds an existing file or folder to what fingerprint() watches. */
  watch(f: string): void {
    this.victims.push(f);
  }

  /** Content hash, owner, mode and existence of every victim: equal before and after an attack. */
  fingerprint(): string[] {
    return this.victims.map((f) => {
      try {
        const st = fs.lstatSync(f);
        return `${f} uid=${st.uid} mode=${(st.mode & 0o7777).toString(8)} ${st.isFile() ? crypto.createHash('sha256').update(fs.readFileSync(f)).digest('hex') : 'dir:' + fs.readdirSync(f).sort().join(',')}`;
      } catch (e) {
        return `${f} missing (${(e as NodeJS.ErrnoException).code})`;
      }
    });
  }

  /** A folder under base owned by `u`. */
  userDir(u: AttackUser, name: string, mode = 0o755): string {
    const d = path.join(this.base, name);
    fs.mkdirSync(d, { mode, recursive: true });
    fs.chownSync(d, u.uid, u.gid);
    fs.chmodSync(d, mode);
    return d;
  }

  helperFor(u: AttackUser): Helper {
    return startInstalledHelper(this.launcher, u, this.children);
  }

  dispose(): void {
    for (const c of this.children) c.kill('SIGKILL');
    fs.rmSync(this.base, { recursive: true, force: true });
  }
}
