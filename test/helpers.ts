// Shared by test files: paths, the CLI runner, and root/BPF checks that turn into skip reasons.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { untrustedReason } from '../extension/privilege/trustedPath';

export const repoRoot = path.resolve(__dirname, '..');
export const distDir = path.join(repoRoot, 'dist');
export const cliJs = path.join(distDir, 'cli.js');
export const helperJs = path.join(distDir, 'helper.js');
/** The runner of a user's own code (run/*, bpf/verify, the bpf-run session); the helper refuses those. */
export const runnerJs = path.join(distDir, 'runner.js');

/** Why kernel tests cannot run here, or undefined when they can. */
export function kernelSkipReason(): string | undefined {
  if (process.geteuid?.() !== 0) return 'BPF tests need root (CAP_SYS_ADMIN for uprobes/USDT); run the tests as root';
  if (!fs.existsSync('/sys/kernel/btf/vmlinux')) return 'the kernel has no BTF (/sys/kernel/btf/vmlinux)';
  if (!fs.existsSync(path.join(distDir, 'ebpf_studio.node'))) return 'the native addon is not built: run npm run build';
  return undefined;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `cwd`: where the CLI runs; `build` writes compile_commands.json there, so keep it out of the repo. */
export function runCli(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {}): CliResult {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [cliJs, ...args], { encoding: 'utf8', timeout: opts.timeoutMs ?? 60_000, env: opts.env ?? process.env, cwd: opts.cwd, maxBuffer: 256 << 20 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - t0 };
}

/** Starts the CLI in the background; resolves with its output when it exits. */
export function startCli(args: string[], opts: { env?: NodeJS.ProcessEnv } = {}) {
  const child = spawn(process.execPath, [cliJs, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise<CliResult>((resolve) => {
    const t0 = Date.now();
    child.on('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
  });
  return { child, done, stderr: () => stderr, stdout: () => stdout };
}

/**
 * Starts the privileged helper as the extension does (a child on stdio, JSON-RPC over its
 * stdin/stdout); `exited` resolves with how and when it ended, which the lifecycle tests check.
 */
export function startHelper() {
  const child = spawn(process.execPath, [helperJs], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((r) => child.on('exit', (code, signal) => r({ code, signal, at: Date.now() })));
  return { child, conn, exited, stderr: () => stderr };
}

/** BPF programs loaded right now (bpftool prog list). */
export function loadedPrograms(): { id: number; name: string }[] {
  const r = spawnSync('bpftool', ['prog', 'list', '--json'], { encoding: 'utf8' });
  if (r.status !== 0) return [];
  return (JSON.parse(r.stdout) as { id: number; name?: string }[]).map((p) => ({ id: p.id, name: p.name ?? '' }));
}

export function loadedProgramNames(): string[] {
  return loadedPrograms().map((p) => p.name);
}

/**
 * Ids of programs matching `name` that appeared since `before` (a loadedPrograms() snapshot):
 * other processes may load the same object at the same time, so tests track ids, not names.
 */
export function newProgramIds(before: { id: number }[], name: (n: string) => boolean): number[] {
  const old = new Set(before.map((p) => p.id));
  return loadedPrograms().filter((p) => !old.has(p.id) && name(p.name)).map((p) => p.id);
}

export function programIdsLoaded(ids: number[]): number[] {
  const now = new Set(loadedPrograms().map((p) => p.id));
  return ids.filter((id) => now.has(id));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor(cond: () => boolean, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await sleep(stepMs);
  }
  return cond();
}

/** A fresh temporary folder with test/fixtures/java/<source> compiled into its classes/ folder (JDK 17 by default). */
export function compileJavaFixture(prefix: string, source: string, jdk = '/usr/lib/jvm/java-17-openjdk-amd64'): { work: string; classes: string } {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const classes = path.join(work, 'classes');
  const fixtures = path.join(repoRoot, 'test/fixtures/java');
  // -sourcepath: the helper classes a fixture uses (FixtureRun.java) are compiled with it
  const jc = spawnSync(`${jdk}/bin/javac`, ['-d', classes, '-sourcepath', fixtures, path.join(fixtures, source)], { encoding: 'utf8' });
  if (jc.status !== 0) throw new Error(`javac ${source} failed: ${jc.stderr}`);
  return { work, classes };
}

/**
 * heavy()'s share of the thread CPU time AgentSplit.java measured itself between two points of its
 * output (`from` and `to` are offsets into it): the last "split" line before `from` to the last
 * one before `to`. C2 compiles heavy() and light() differently from run to run, so 3:1 by
 * iterations is not 3:1 in time; a profile's share is held against this.
 */
export function agentSplitShare(out: string, from: number, to = out.length): number | undefined {
  const last = (text: string) => {
    const all = [...text.matchAll(/^split heavy (\d+) light (\d+)$/gm)];
    const m = all.at(-1);
    return m ? { heavy: Number(m[1]), light: Number(m[2]) } : { heavy: 0, light: 0 };
  };
  const [a, b] = [last(out.slice(0, from)), last(out.slice(0, to))];
  const [heavy, light] = [b.heavy - a.heavy, b.light - a.light];
  return heavy + light > 0 ? heavy / (heavy + light) : undefined;
}

/** Kills the JVMs a test started and removes its folder. */
export function removeJavaFixture(children: ChildProcess[], work: string): void {
  for (const c of children) c.kill('SIGKILL');
  if (work) fs.rmSync(work, { recursive: true, force: true });
}

/** Why the Java agent's kernel tests cannot run here (no BPF, no JDK 17, or the agent not built), or undefined. */
export function javaAgentSkipReason(jdk = '/usr/lib/jvm/java-17-openjdk-amd64'): string | undefined {
  const agent = path.join(distDir, 'libebpf-studio-jvmagent.so');
  return (
    kernelSkipReason() ??
    (!fs.existsSync(`${jdk}/bin/javac`) ? `no JDK 17 at ${jdk} (apt-get install openjdk-17-jdk-headless)` : undefined) ??
    (!fs.existsSync(agent) ? `the JVM agent is not built (${agent}): run npm run build with a JDK installed` : undefined)
  );
}

/** Line numbers (1-based) of the markers in a fixture source: `re`'s first group, in a comment, names each. */
export function markerLines(src: string, re: RegExp): Map<string, number> {
  const m = new Map<string, number>();
  fs.readFileSync(src, 'utf8')
    .split('\n')
    .forEach((l, i) => {
      const hit = re.exec(l);
      if (hit) m.set(hit[1], i + 1);
    });
  return m;
}

let stagedDist: string | undefined;
/**
 * helper.js in a folder only root can write: dist/ itself in a root-owned clone (CI's), otherwise a
 * root-owned copy made once per test process and removed at its exit. A helper raised to root for
 * another user rightly refuses to run from a folder a user can write, and a user's own clone driven
 * with `sudo` is such a folder.
 */
export function rootOwnedHelperJs(): string {
  if (untrustedReason(helperJs) === undefined) return helperJs;
  if (!stagedDist) {
    const dir = fs.mkdtempSync(path.join('/var/tmp', 'ebpf-studio-dist-'));
    fs.chmodSync(dir, 0o755);
    fs.cpSync(distDir, dir, { recursive: true, filter: (s) => !s.endsWith('.map') });
    spawnSync('chown', ['-R', '0:0', dir]);
    spawnSync('chmod', ['-R', 'go-w', dir]);
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    stagedDist = dir;
  }
  return path.join(stagedDist, 'helper.js');
}
