// `jfr`: how fast `ebpf-studio jfr` reads a ~100 MB Java Flight Recording, with the JDK's own `jfr`
// tool on the same file in the same run (interleaved rounds), and the peak memory of each. The
// recording is a real OpenJDK 17 one (test/fixtures/java/JfrWorkload.java under the profile
// settings, whose GC events make it large), its chunks repeated to 100 MB: a recording is a
// sequence of self-contained chunks, and both readers read every one.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, interleave, JAVA_HOME, median, root, round, type BenchContext, type Row } from './lib';

const JFR = fs.existsSync('/usr/bin/jfr') ? '/usr/bin/jfr' : path.join(JAVA_HOME, 'bin', 'jfr');
const TARGET_BYTES = 100 * 1024 * 1024;

/** Wall seconds, CPU seconds (user + system) and peak RSS (KiB) of a command, its output thrown away. */
function timed(cmd: string, args: string[]): { s: number; cpu: number; kb: number } {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %U %S %M', cmd, ...args], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
  const m = /(\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+)\s*$/.exec(r.stderr);
  if (r.status !== 0 || !m) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr.slice(-400)}`);
  return { s: Number(m[1]), cpu: Number(m[2]) + Number(m[3]), kb: Number(m[4]) };
}

function makeRecording(dir: string, log: (m: string) => void): string {
  const src = path.join(root, 'test/fixtures/java/JfrWorkload.java');
  const jc = spawnSync(path.join(JAVA_HOME, 'bin', 'javac'), ['-d', dir, src], { encoding: 'utf8' });
  if (jc.status !== 0) throw new Error(`javac: ${jc.stderr}`);
  const one = path.join(dir, 'one.jfr');
  const j = spawnSync(path.join(JAVA_HOME, 'bin', 'java'), ['-Xmx256m', `-XX:StartFlightRecording=filename=${one},settings=profile`, '-cp', dir, 'JfrWorkload', '8'], { encoding: 'utf8', timeout: 120_000 });
  if (j.status !== 0) throw new Error(`java: ${j.stderr}`);
  const bytes = fs.readFileSync(one);
  const copies = Math.max(1, Math.ceil(TARGET_BYTES / bytes.length));
  const big = path.join(dir, 'big.jfr');
  fs.writeFileSync(big, Buffer.concat(Array.from({ length: copies }, () => bytes)));
  log(`  recording: ${bytes.length.toLocaleString('en-US')} bytes in 8 s, ×${copies} = ${fs.statSync(big).size.toLocaleString('en-US')} bytes`);
  return big;
}

export async function benchJfr(ctx: BenchContext): Promise<Row[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-jfr-'));
  try {
    const file = makeRecording(dir, ctx.log);
    const mb = fs.statSync(file).size / 1e6;
    const rss: Record<string, number[]> = { ours: [], jfrSummary: [], oursCpu: [], jfrPrint: [] };
    const cpuRate: Record<string, number[]> = { ours: [], jfrSummary: [], oursCpu: [], jfrPrint: [] };
    const run = (k: string, cmd: string, args: string[]) => async () => {
      const t = timed(cmd, args);
      rss[k].push(t.kb / 1024);
      cpuRate[k].push(mb / t.cpu);
      return mb / t.s;
    };
    const r = await interleave(
      ctx.quick ? 2 : 5,
      {
        ours: run('ours', process.execPath, [cli, 'jfr', file]),
        jfrSummary: run('jfrSummary', JFR, ['summary', file]),
        oursCpu: run('oursCpu', process.execPath, [cli, 'jfr', file, '--event', 'cpu', '--json']),
        jfrPrint: run('jfrPrint', JFR, ['print', '--json', '--events', 'jdk.ExecutionSample', file]),
      },
      ctx.log,
    );
    const load = os.loadavg()[0].toFixed(2);
    const m = (k: string) => round(median(r[k]), 1);
    const peak = (k: string) => round(Math.max(...rss[k]), 0);
    // wall time on a loaded machine is mostly waiting for a CPU: MB per CPU-second is the steadier figure
    const perCpu = (k: string) => round(median(cpuRate[k]), 1);
    const what = `${round(mb, 0)} MB OpenJDK 17 recording (profile settings, chunks repeated), wall time of the whole command incl. process start, median of ${r.ours.length} interleaved rounds, load ${load}`;
    return [
      { name: 'jfr read: event counts per type (100 MB recording)', value: m('ours'), unit: 'MB/s', target: null, better: 'higher', peer: { name: 'jfr summary', value: m('jfrSummary') }, detail: `${what}; per CPU-second ${perCpu('ours')} MB (jfr summary ${perCpu('jfrSummary')} MB, a JVM that also compiles on other threads); peak RSS ${peak('ours')} MB (jfr summary ${peak('jfrSummary')} MB)` },
      { name: 'jfr read: CPU profile from execution samples (100 MB recording)', value: m('oursCpu'), unit: 'MB/s', target: null, better: 'higher', peer: { name: 'jfr print --json --events jdk.ExecutionSample', value: m('jfrPrint') }, detail: `${what}; per CPU-second ${perCpu('oursCpu')} MB (jfr print ${perCpu('jfrPrint')} MB); ours prints the aggregated profile document, jfr every sample` },
      { name: 'jfr read: peak RSS reading 100 MB', value: peak('oursCpu'), unit: 'MB', target: null, better: 'lower', peer: { name: 'jfr print --json --events jdk.ExecutionSample', value: peak('jfrPrint') }, detail: `our reader holds one chunk (HotSpot rotates them at ~12 MB) and its constant pools at a time, in a Node process of ~45 MB at rest; counts only: ${peak('ours')} MB, jfr summary ${peak('jfrSummary')} MB` },
    ];
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
