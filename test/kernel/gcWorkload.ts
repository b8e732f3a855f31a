// The GC workload shared by the Java GC kernel tests: test/fixtures/java/GcWorkload.java, compiled
// once per test file, started under -XX:+UseSerialGC -Xmx64m, waiting for go() before it makes
// its GCs; `done` resolves with the GCs the JVM itself counted after go().
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findJdks } from '../../extension/sys/proc/processes';
import { repoRoot, waitFor } from '../helpers';

export const jdk = findJdks().find((j) => j.usdt && fs.existsSync(path.join(j.home, 'bin', 'javac')));
export const noJdkReason = jdk ? undefined : 'no JDK with hotspot USDT probes and javac found (apt-get install openjdk-17-jdk)';

export interface Counts {
  young: number;
  full: number;
}

function parseCounts(line: string): Counts {
  const m = /young=(\d+) full=(\d+)/.exec(line);
  assert.ok(m, `no counts in ${JSON.stringify(line)}`);
  return { young: Number(m[1]), full: Number(m[2]) };
}

export class GcWorkloads {
  readonly classDir: string;
  readonly children: ChildProcess[] = [];

  /** Compiles the workload (call in before()). */
  constructor() {
    this.classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-gcw-'));
    const r = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', this.classDir, path.join(repoRoot, 'test', 'fixtures', 'java', 'GcWorkload.java')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `javac failed: ${r.stderr}`);
  }

  /**
   * Starts GcWorkload; it waits for go() before making its GCs, and lingers lingerMs after them. `jvmArgs`: more JVM options (-Xlog:gc:file=...).
   * `cgroup`: a cgroup folder the process joins before it execs java, as a container runtime puts it.
   */
  async start(fullGcs: number, allocMb: number, lingerMs = 0, jvmArgs: string[] = [], cgroup?: string) {
    const argv = [path.join(jdk!.home, 'bin', 'java'), '-XX:+UseSerialGC', '-Xmx64m', ...jvmArgs, '-cp', this.classDir, 'GcWorkload', String(fullGcs), String(allocMb), String(lingerMs)];
    const child = cgroup
      ? spawn('/bin/sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, ...argv], { stdio: ['pipe', 'pipe', 'inherit'] })
      : spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    this.children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    assert.ok(await waitFor(() => out.includes('\n'), 20_000), 'GcWorkload did not start');
    const baseline = parseCounts(out.split('\n')[0]);
    return {
      pid: child.pid!,
      go: () => child.stdin!.write('go\n'),
      done: (async () => {
        const code = await exited;
        assert.equal(code, 0, `GcWorkload exited with ${code}: ${out}`);
        const end = parseCounts(out.split('\n').find((l) => l.startsWith('done'))!);
        return { young: end.young - baseline.young, full: end.full - baseline.full, exitedAt: Date.now() };
      })(),
    };
  }

  /** Kills what is still running and removes the classes (call in after()). */
  dispose(): void {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fs.rmSync(this.classDir, { recursive: true, force: true });
  }
}
