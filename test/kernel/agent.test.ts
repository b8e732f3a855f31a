// The fleet agent against the real engines: Debian's Prometheus scrapes `ebpf-studio agent` on
// loopback every 2 s while a JVM (test/fixtures/java/GcWorkload.java, -XX:+UseSerialGC) makes its
// GCs with -Xlog:gc to a file; a PromQL query through Prometheus's HTTP API must count exactly the
// pauses the JVM logged, histogram_quantile must give a p99 near the log's own, promtool must find
// nothing wrong with a scrape, and `go tool pprof -top` on the pull endpoint must name the hot
// Java method of a second JVM (test/fixtures/java/HotMethod.java). SIGTERM must leave none of the
// agent's BPF programs loaded. The off-CPU and allocation pull endpoints: `go tool pprof -top` on
// /debug/pprof/offcpu names the functions a C workload (test/fixtures/c/offcpuwait.c) sleeps in, with
// three times the time in wait_long as in wait_short, as the workload does (built without frame
// pointers: whole stacks come from the kernel's unwind-table walk), and /debug/pprof/profile takes
// an -O2 no-frame-pointer program's samples to main as perf --call-graph dwarf does in the same
// seconds (test/fixtures/c/unwind); /debug/pprof/allocs on a
// JVM (test/fixtures/java/HeapSites.java) puts the fixture's line with the most allocations on top,
// and refuses a JVM the config does not cover. Per cgroup, a cgroup the CFS quota starves (the kernel
// counts its throttling) has a clearly higher run-queue p99 than a free one. Of two JVMs, one moved
// into a cgroup named as docker names a container's, an agent configured with that container id
// exports the GC pauses of that one only and refuses the other's allocation profile. Bad input: a port in use, an unreadable or invalid config (exit 2,
// the line at fault), a non-loopback address without TLS (refused, with the fix). The kit tracers'
// histograms ("histograms" in the config), scraped by Prometheus: the I/Os of a loop disk of the
// test's own equal libbpf-tools biolatency -D's count, connects to 127.0.0.2 the test's count, and a
// sleeper's on-CPU runs our `cpudist --pid`'s. Native function latency ("latency" in the config): the
// calls of the latency fixture (test/fixtures/c/latency) started after the agent, and of its copy in
// a container-like box (its own mount namespace and file, a docker-ID.scope cgroup), as Prometheus
// has them, equal the program's own count, bucket by bucket as its own clock says; a C++ function that
// throws through itself is counted for the calls that returned and its program lives; a function
// only ever inlined, one that does not exist and a missing file are down with the reason; an
// unprivileged user's own program run at the copy's path (unshare -rm) is not counted. Closed by default:
// the first test's agent runs as installed (the token --make-token writes) and Prometheus scrapes it
// with authorization.credentials_file; a missing token or a group-writable config stops the start.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { cliJs, javaAgentSkipReason, kernelSkipReason, loadedPrograms, markerLines, programIdsLoaded, repoRoot, runCli, sleep, startCli, waitFor } from '../helpers';
import { GcWorkloads, jdk, noJdkReason } from './gcWorkload';
import { cgroup2Mount } from '../../extension/sys/cgroup';
import { loadProfileBytes } from '../../extension/sys/profileFile';
import { freePort, promQuery, prometheus, promtool } from './promKit';
import { parseBccHistograms } from './bccText';
import { buildUnwindFixture } from '../peers/unwindFixture';
import { perfBinary, perfDwarf, type PerfRun } from '../peers/perfDwarf';
import { CFI_NOT_YET_NOTE } from '../../extension/tracers/cfiTables';
import type { ProfileStack } from '../../extension/protocol/profile';
import { attackSkipReason, makeUser, removeUser, spawnAsUser, type AttackUser } from './attackKit';

const go = ['/usr/bin/go', '/usr/lib/go/bin/go'].find((p) => fs.existsSync(p));
const skip = kernelSkipReason() ?? noJdkReason ?? (!prometheus || !promtool ? "Debian's prometheus package is not installed (scripts/install-deps.sh --test)" : undefined);

let work = '';
const children: ChildProcess[] = [];

/** The BPF program ids a process holds open (its fds' fdinfo), i.e. exactly the agent's own. */
function progIdsOf(pid: number): number[] {
  const ids: number[] = [];
  let fds: string[] = [];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fdinfo`);
  } catch {
    return ids;
  }
  for (const fd of fds) {
    try {
      const m = /^prog_id:\s*(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'));
      if (m) ids.push(Number(m[1]));
    } catch {
      /* closed meanwhile */
    }
  }
  return [...new Set(ids)];
}

/** Debian's Prometheus scraping the agent at 127.0.0.1:agentPort every `every` (with a bearer token file if given). */
async function startPrometheus(name: string, agentPort: number, every: string, tokenFile?: string) {
  const promPort = await freePort();
  const promCfg = path.join(work, `${name}.yml`);
  const auth = tokenFile ? `    authorization:\n      type: Bearer\n      credentials_file: ${tokenFile}\n` : '';
  fs.writeFileSync(promCfg, `global:\n  scrape_interval: ${every}\n  scrape_timeout: ${every}\nscrape_configs:\n  - job_name: ebpf-studio\n${auth}    static_configs:\n      - targets: ['127.0.0.1:${agentPort}']\n`);
  const child = spawn(prometheus!, [`--config.file=${promCfg}`, `--storage.tsdb.path=${path.join(work, `${name}-tsdb`)}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let log = '';
  child.stderr!.on('data', (d) => (log += d));
  return { child, base: `http://127.0.0.1:${promPort}`, log: () => log };
}

/** `go tool pprof ARGS URL`, with its own HOME so it writes its saved profiles into the test's folder. */
function goPprof(args: string[], url: string, home: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    // pprof waits 1.5 × ?seconds for the answer by default: too little when the BPF programs load on a busy machine.
    const p = spawn(go!, ['tool', 'pprof', '-timeout=60', ...args, url], { env: { ...process.env, HOME: home, PPROF_TMPDIR: home } });
    let o = '';
    p.stdout.on('data', (d) => (o += d));
    p.stderr.on('data', (d) => (o += d));
    p.on('exit', (code) => resolve({ code, out: o }));
  });
}

/** A -top row's value in seconds ("1.23s", "450ms", "2.5mins", "12us"). */
function pprofSeconds(v: string): number {
  const m = /^([\d.]+)(us|µs|ms|s|mins|hrs)$/.exec(v);
  if (!m) return NaN;
  return Number(m[1]) * { us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, mins: 60, hrs: 3600 }[m[2] as 'us']!;
}

const pct = (n: number, of: number) => `${((100 * n) / Math.max(1, of)).toFixed(1)} %`;

/** Of a process's stacks (weight: value or count): all, those walked before their tables were in (marked so), the rest, and of those the ones reaching `root`. */
function wholeShare(stacks: ProfileStack[], root: RegExp): { all: number; early: number; walked: number; whole: number } {
  const r = { all: 0, early: 0, walked: 0, whole: 0 };
  for (const st of stacks) {
    const w = st.value ?? st.count;
    r.all += w;
    if (st.frames.some((f) => f.function === CFI_NOT_YET_NOTE)) r.early += w;
    else {
      r.walked += w;
      if (st.frames.some((f) => root.test(f.function ?? ''))) r.whole += w;
    }
  }
  return r;
}

/** The agent's CPU profile of the -O2 no-frame-pointer fixture: its samples reach main as often as perf --call-graph dwarf's (same seconds) do, 90 % at least. */
async function checkSpinnerProfile(t: { diagnostic(m: string): void }, cpu: { status: number; bytes: Buffer }, pid: number, perfRun: Promise<PerfRun> | undefined): Promise<void> {
  assert.equal(cpu.status, 200, cpu.bytes.toString());
  const ours = wholeShare(loadProfileBytes(cpu.bytes, 'CPU').result!.stacks.filter((st) => st.pid === pid), /^main$/);
  const perf = await perfRun;
  const perfMain = perf ? perf.stacks.filter((st) => st.frames.includes('main')).reduce((n, st) => n + st.count, 0) / Math.max(1, perf.samples) : undefined;
  t.diagnostic(`/debug/pprof/profile, -O2 no-frame-pointer fixture: ${ours.all} samples, ${pct(ours.whole, ours.walked)} of the ${ours.walked} walked by its tables reach main (${pct(ours.whole, ours.all)} of all; ${pct(ours.early, ours.all)} walked before the tables were in); perf --call-graph dwarf: ${perf ? `${perf.samples} samples, ${(100 * perfMain!).toFixed(1)} % reach main` : 'not installed'}; load ${os.loadavg()[0].toFixed(1)}`);
  assert.ok(ours.walked >= 20, `${ours.walked} samples of the fixture walked by its tables`);
  assert.ok(ours.whole >= 0.9 * ours.walked, 'the fixture\'s samples reach main through code without frame pointers');
  if (perfMain !== undefined) assert.ok(ours.whole / ours.walked >= perfMain - 0.02, 'main reached at least as often as perf --call-graph dwarf reaches it');
}

/** Pauses in a -Xlog:gc file: "[0.123s][info][gc] GC(4) Pause Young (Allocation Failure) 17M->1M(61M) 2.345ms". */
function xlogPauses(file: string): number[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => /\] GC\(\d+\) Pause .* (\d+(?:\.\d+)?)ms$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]) / 1000);
}

/** A run-queue histogram from an exposition: cumulative counts per upper bound (seconds). */
function runqBuckets(text: string, cgroup: string): { le: number[]; cum: number[]; count: number } | undefined {
  const le: number[] = [];
  const cum: number[] = [];
  const esc = cgroup.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const m of text.matchAll(new RegExp(`^ebpf_studio_runqueue_latency_seconds_bucket\\{cgroup="${esc}",le="([^"]+)"\\} (\\d+)$`, 'gm'))) {
    le.push(m[1] === '+Inf' ? Infinity : Number(m[1]));
    cum.push(Number(m[2]));
  }
  if (le.length === 0) return undefined;
  return { le, cum, count: cum[cum.length - 1] };
}

/** histogram_quantile's answer: linear inside the bucket the rank falls in. */
function quantile(h: { le: number[]; cum: number[]; count: number }, q: number): number {
  const rank = q * h.count;
  const i = h.cum.findIndex((c) => c >= rank);
  const lower = i > 0 ? h.le[i - 1] : 0;
  const below = i > 0 ? h.cum[i - 1] : 0;
  if (!Number.isFinite(h.le[i])) return lower;
  return lower + ((h.le[i] - lower) * (rank - below)) / Math.max(1, h.cum[i] - below);
}

/**
 * A process that sleeps 2 ms RUNS times once told to go, traced by `ebpf-studio cpudist --pid`
 * meanwhile; run() lets it go and gives the CLI's count of its on-CPU runs.
 */
async function cpudistBeside(): Promise<{ pid: number; run(): Promise<{ runs: number }> }> {
  const RUNS = 1000;
  const sleeper = spawn(process.execPath, ['-e', `process.stdin.once('data',()=>{const a=new Int32Array(new SharedArrayBuffer(4));for(let i=0;i<${RUNS};i++)Atomics.wait(a,0,0,2);process.exit(0)})`], { stdio: ['pipe', 'ignore', 'ignore'] });
  children.push(sleeper);
  const before = new Set(loadedPrograms().map((p) => p.id));
  const cli = startCli(['cpudist', '--pid', String(sleeper.pid), '--json']);
  children.push(cli.child);
  assert.ok(await waitFor(() => loadedPrograms().filter((p) => !before.has(p.id) && /^cpu_(switch|exit)_/.test(p.name)).length === 2, 20_000), `cpudist --pid did not attach: ${cli.stderr()}`);
  await sleep(300);
  return {
    pid: sleeper.pid!,
    async run() {
      sleeper.stdin!.write('go\n');
      const r = await cli.done;
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as { histograms: { count: number }[] };
      return { runs: result.histograms.reduce((a, h) => a + h.count, 0) };
    },
  };
}

/**
 * Two cgroups, "free" and "starved", the starved one limited to 5 ms of CPU per 200 ms. On a
 * unified cgroup v2 machine both are v2 cgroups (cpu.max); on a hybrid one (cpu controller in
 * cgroup v1, v2 mounted at /sys/fs/cgroup/unified for membership) each process joins a v2 cgroup,
 * which names it, and the starved one also a v1 cpu cgroup with cfs_quota_us. A string: why not.
 */
function makeCgroupPair(prefix: string):
  | string
  | { kind: string; label(which: string): string; enter(which: string, pid: number): void; throttled(): number; remove(): void } {
  const root = cgroup2Mount();
  if (!root) return 'no cgroup2 file system is mounted';
  const v2 = (w: string) => path.join(root, `${prefix}-${w}`);
  const controllers = (() => {
    try {
      return fs.readFileSync(path.join(root, 'cgroup.controllers'), 'utf8').split(/\s+/);
    } catch {
      return [];
    }
  })();
  const v1cpu = '/sys/fs/cgroup/cpu';
  const unified = controllers.includes('cpu');
  if (!unified && !fs.existsSync(path.join(v1cpu, 'cpu.cfs_quota_us'))) return 'the cpu controller is in neither cgroup v2 nor a cgroup v1 hierarchy at /sys/fs/cgroup/cpu';
  const made: string[] = [];
  try {
    for (const w of ['free', 'starved']) {
      fs.mkdirSync(v2(w));
      made.push(v2(w));
    }
    if (unified) {
      if (!fs.readFileSync(path.join(root, 'cgroup.subtree_control'), 'utf8').includes('cpu')) fs.writeFileSync(path.join(root, 'cgroup.subtree_control'), '+cpu');
      fs.writeFileSync(path.join(v2('starved'), 'cpu.max'), '5000 200000');
    } else {
      const d = path.join(v1cpu, `${prefix}-starved`);
      fs.mkdirSync(d);
      made.push(d);
      fs.writeFileSync(path.join(d, 'cpu.cfs_period_us'), '200000');
      fs.writeFileSync(path.join(d, 'cpu.cfs_quota_us'), '5000');
    }
  } catch (e) {
    for (const d of made.reverse()) fs.rmdirSync(d);
    return `cannot make test cgroups: ${(e as Error).message}`;
  }
  const quotaDir = unified ? v2('starved') : path.join(v1cpu, `${prefix}-starved`);
  return {
    kind: unified ? 'cgroup v2, cpu.max 5000 200000' : 'hybrid: cgroup v2 membership, cgroup v1 cpu.cfs_quota_us 5000 of 200000',
    label: (w) => `/${prefix}-${w}`,
    enter(w, pid) {
      fs.writeFileSync(path.join(v2(w), 'cgroup.procs'), String(pid));
      if (!unified && w === 'starved') fs.writeFileSync(path.join(quotaDir, 'cgroup.procs'), String(pid));
    },
    throttled: () => Number(/^nr_throttled (\d+)/m.exec(fs.readFileSync(path.join(quotaDir, 'cpu.stat'), 'utf8'))?.[1] ?? 0),
    remove() {
      for (const d of made.reverse()) {
        try {
          fs.rmdirSync(d);
        } catch {
          /* still has a process (it is being killed): the name has the test's pid, no clash */
        }
      }
    },
  };
}

describe('ebpf-studio agent', { skip }, () => {
  before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-agent-'));
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test('Prometheus counts the GC pauses -Xlog:gc logged; promtool is clean; go tool pprof names the hot method; SIGTERM detaches all', { timeout: 150_000 }, async () => {
    const workloads = new GcWorkloads();
    try {
      // As installed: the token --make-token writes (the systemd unit's ExecStartPre), required by default.
      const tokenFile = path.join(work, 'etc', 'agent.token');
      const made = runCli(['agent', '--make-token', '--token-file', tokenFile]);
      assert.equal(made.code, 0, made.stderr);
      const auth = { Authorization: `Bearer ${fs.readFileSync(tokenFile, 'utf8').trim()}` };
      const agent = startCli(['agent', '--listen', '127.0.0.1:0', '--token-file', tokenFile, '--verbose']);
      children.push(agent.child);
      assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(agent.stderr()), 30_000), `the agent did not start: ${agent.stderr()}`);
      const base = /serving (http:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
      const agentPort = Number(new URL(base).port);
      const ours = progIdsOf(agent.child.pid!);
      assert.ok(ours.length > 0, 'the agent holds no BPF programs');

      assert.equal((await fetch(`${base}/metrics`)).status, 401, 'the agent answers without its token');

      // Prometheus, scraping the agent every 2 s with the token file (authorization.credentials_file).
      const prom = await startPrometheus('prometheus', agentPort, '2s', tokenFile);
      const promBase = prom.base;
      const promStarted = Date.now();

      // A HotMethod JVM for the profile, and the GC workload with -Xlog:gc to a file.
      const hm = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', path.join(work, 'hm'), path.join(__dirname, '..', 'fixtures', 'java', 'HotMethod.java')], { encoding: 'utf8' });
      assert.equal(hm.status, 0, hm.stderr);
      const hot = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+PreserveFramePointer', '-XX:CompileCommand=quiet', '-XX:CompileCommand=dontinline,HotMethod::hotLoop', '-cp', path.join(work, 'hm'), 'HotMethod', '60'], { stdio: 'ignore' });
      children.push(hot);
      const gcLog = path.join(work, 'gc.log');
      const jvm = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+UseSerialGC', '-Xmx64m', `-Xlog:gc:file=${gcLog}`, '-cp', workloads.classDir, 'GcWorkload', '3', '1500'], { stdio: ['pipe', 'pipe', 'inherit'] });
      children.push(jvm);
      let out = '';
      jvm.stdout!.on('data', (d) => (out += d));
      const jvmExit = new Promise<number | null>((r) => jvm.on('exit', (c) => r(c)));
      assert.ok(await waitFor(() => out.includes('ready'), 20_000), 'GcWorkload did not start');

      // Two scrapers at the same time: one sampling session serves both. go tool pprof sends no
      // bearer token, so it reads the profile pulled with one (as curl -H would save it).
      const pprofUrl = `${base}/debug/pprof/profile?seconds=5`;
      const pprofHome = path.join(work, 'pprof-home');
      fs.mkdirSync(pprofHome);
      const pull = () => fetch(pprofUrl, { headers: auth }).then(async (r) => ({ status: r.status, bytes: Buffer.from(await r.arrayBuffer()) }));
      const [a, b] = await Promise.all([pull(), pull()]);
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.equal(a.bytes[0], 0x1f, 'the profile is gzipped');
      assert.ok(a.bytes.equals(b.bytes), 'two concurrent scrapes got different profiles: more than one sampling session ran');
      const pprofFile = path.join(pprofHome, 'cpu.pb.gz');
      fs.writeFileSync(pprofFile, a.bytes);
      const pprofRun = go ? goPprof(['-top', '-nodecount=30'], pprofFile, pprofHome) : undefined;

      jvm.stdin!.write('go\n');
      assert.equal(await jvmExit, 0, `GcWorkload failed: ${out}`);
      const logged = xlogPauses(gcLog);
      assert.ok(logged.length >= 10, `the JVM logged only ${logged.length} pauses`);

      if (pprofRun) {
        const r = await pprofRun;
        assert.equal(r.code, 0, `go tool pprof failed: ${r.out}`);
        assert.match(r.out, /HotMethod\.hotLoop/, `go tool pprof -top does not name HotMethod.hotLoop:\n${r.out}`);
        console.log(`go tool pprof -top (first lines):\n${r.out.split('\n').slice(0, 12).join('\n')}`);
      } else console.log('go is not installed: go tool pprof was not run');

      // promtool on a scrape of /metrics that holds the JVM's series.
      // The tracer hands events over every 500 ms: the JVM's last GCs reach /metrics shortly after it exits.
      const series = new RegExp(`ebpf_studio_jvm_gc_pause_seconds_count\\{main_class="GcWorkload",pid="${jvm.pid}",collector="[^"]+",kind="[^"]+"\\} (\\d+)`, 'g');
      const countIn = (text: string) => [...text.matchAll(series)].reduce((a, m) => a + Number(m[1]), 0);
      let metrics = '';
      const seen = await waitFor(() => {
        void fetch(`${base}/metrics`, { headers: auth }).then(async (r) => (metrics = await r.text()), () => undefined);
        return countIn(metrics) === logged.length;
      }, 15_000, 250);
      assert.ok(seen, `/metrics counts ${countIn(metrics)} pauses of pid ${jvm.pid}, -Xlog:gc logged ${logged.length}`);
      const check = spawnSync(promtool!, ['check', 'metrics'], { input: metrics, encoding: 'utf8' });
      assert.equal(check.status, 0, `promtool check metrics failed: ${check.stdout}${check.stderr}`);
      assert.equal(`${check.stdout}${check.stderr}`.trim(), '', `promtool check metrics reported: ${check.stdout}${check.stderr}`);

      // Prometheus has scraped ≥ 20 s and once more after the JVM's last GC: its count is ours.
      const countQ = `sum(ebpf_studio_jvm_gc_pause_seconds_count{pid="${jvm.pid}"})`;
      const exitedAt = Date.now();
      let count: number | undefined;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        count = await promQuery(promBase, countQ).catch(() => undefined);
        if (Date.now() - promStarted >= 20_000 && Date.now() - exitedAt >= 5_000 && count === logged.length) break;
        await sleep(1000);
      }
      assert.equal(count, logged.length, `Prometheus counted ${count} GC pauses, -Xlog:gc logged ${logged.length}\n${prom.log().slice(-2000)}`);
      const p99 = await promQuery(promBase, `histogram_quantile(0.99, sum by (le) (ebpf_studio_jvm_gc_pause_seconds_bucket{pid="${jvm.pid}"}))`);
      const sorted = [...logged].sort((x, y) => x - y);
      const logP99 = sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)];
      assert.ok(p99 !== undefined && Number.isFinite(p99) && p99 > 0, `no p99 from histogram_quantile: ${p99}`);
      // Buckets are 1-2-5 per decade: the estimate lies within a bucket (≤ 2.5×) of the log's own p99.
      assert.ok(p99 <= logP99 * 3 && p99 >= logP99 / 3, `histogram_quantile p99 ${p99} s is far from -Xlog:gc's p99 ${logP99} s`);
      console.log(`GC pauses: Prometheus ${count}, -Xlog:gc ${logged.length}; p99 histogram_quantile ${(p99 * 1000).toFixed(3)} ms, -Xlog:gc ${(logP99 * 1000).toFixed(3)} ms`);

      // SIGTERM: exit 0, and none of the programs it held stays loaded.
      agent.child.kill('SIGTERM');
      const done = await agent.done;
      assert.equal(done.code, 0, `the agent exited with ${done.code}: ${done.stderr}`);
      assert.deepEqual(programIdsLoaded(ours), [], 'BPF programs of the agent are still loaded after SIGTERM');
      prom.child.kill('SIGTERM');
    } finally {
      workloads.dispose();
    }
  });

  test('jvm.containers: of two JVMs, only the one in the configured container (a docker-ID.scope cgroup) has GC series; allocs refuses the other', { timeout: 90_000 }, async (t) => {
    const root = cgroup2Mount();
    if (!root) return t.skip('no cgroup2 file system is mounted: a JVM cannot be put into a container-like cgroup');
    // A cgroup named as docker's systemd driver names a container's (on a hybrid machine, below
    // /sys/fs/cgroup/unified: membership only, which is all the agent reads).
    const id = crypto.randomBytes(32).toString('hex');
    const scope = path.join(root, `docker-${id}.scope`);
    fs.mkdirSync(scope);
    const workloads = new GcWorkloads();
    try {
      // The agent under test covers the container; a control agent beside it covers every JVM (it
      // must see the other JVM's GCs, so their absence from the first is the config's doing).
      const start = async (name: string, jvm: object) => {
        const cfg = path.join(work, `${name}.json`);
        fs.writeFileSync(cfg, JSON.stringify({ jvm, runqueue: { enabled: false }, profile: { offcpu: false } }));
        // Authentication is not what this test checks (the first and the last do).
        const a = startCli(['agent', '--listen', '127.0.0.1:0', '--insecure-no-auth', '--config', cfg, '--verbose']);
        children.push(a.child);
        assert.ok(await waitFor(() => /java-gc attached/.test(a.stderr()) && /serving (http:\/\/[^/]+)\/metrics/.test(a.stderr()), 30_000), `the agent did not start: ${a.stderr()}`);
        assert.match(a.stderr(), /WARNING: serving WITHOUT AUTHENTICATION \(--insecure-no-auth\)/);
        return { agent: a, base: /serving (http:\/\/[^/]+)\/metrics/.exec(a.stderr())![1] };
      };
      const [{ agent, base }, control] = await Promise.all([start('containers', { containers: [id.slice(0, 12)] }), start('control', {})]);
      // Each lingers 3 s after its GCs (done in a fraction of a second): the agent reads who a JVM
      // is from /proc/PID when its first GCs reach it (every 500 ms), so the JVM must still be there.
      // Into the container before it execs java, as a runtime does (the agent reads a JVM's cgroup
      // when it first sees it, which can be right at the launcher's exec).
      const [inside, outside] = await Promise.all([workloads.start(2, 300, 3000, [], scope), workloads.start(2, 300, 3000)]);
      assert.match(fs.readFileSync(`/proc/${inside.pid}/cgroup`, 'utf8'), new RegExp(`^0::/docker-${id}\\.scope$`, 'm'));

      const refused = await fetch(`${base}/debug/pprof/allocs?seconds=1&pid=${outside.pid}`);
      const refusedText = await refused.text();
      assert.equal(refused.status, 403, refusedText);
      assert.match(refusedText, /is not a JVM this agent covers: its cgroup \/.* is not in "jvm": \{"containers"/);

      inside.go();
      outside.go();
      const [gcsIn, gcsOut] = await Promise.all([inside.done, outside.done]);
      const count = (text: string, pid: number) => [...text.matchAll(new RegExp(`^ebpf_studio_jvm_gc_pause_seconds_count\\{main_class="GcWorkload",pid="${pid}"(,container="([0-9a-f]+)")?,[^}]*\\} (\\d+)$`, 'gm'))];
      let text = '';
      const want = gcsIn.young + gcsIn.full;
      const exported = () => count(text, inside.pid).reduce((a, m) => a + Number(m[3]), 0);
      for (const end = Date.now() + 20_000; Date.now() < end; await sleep(500)) {
        text = await (await fetch(`${base}/metrics`)).text();
        if (exported() >= want) break;
      }
      assert.ok(
        exported() >= want,
        `the contained JVM's ${want} GCs are not all in /metrics:\n${text.split('\n').filter((l) => l.includes('gc_pause_seconds_count')).join('\n')}`,
      );
      await sleep(1500); // the tracer hands events over every 500 ms: the other JVM's had time to arrive
      text = await (await fetch(`${base}/metrics`)).text();
      const seriesIn = count(text, inside.pid);
      t.diagnostic(`contained JVM (pid ${inside.pid}): ${exported()} pauses exported, ${want} made; the other JVM (pid ${outside.pid}) made ${gcsOut.young + gcsOut.full}, exported: ${count(text, outside.pid).length} series`);
      assert.ok(seriesIn.every((m) => m[2] === id.slice(0, 12)), `the contained JVM's series do not carry container="${id.slice(0, 12)}":\n${seriesIn.map((m) => m[0]).join('\n')}`);
      const controlText = await (await fetch(`${control.base}/metrics`)).text();
      const seenOut = count(controlText, outside.pid).reduce((a, m) => a + Number(m[3]), 0);
      t.diagnostic(`the control agent (every JVM) exported ${seenOut} pauses of the other JVM`);
      assert.ok(seenOut > 0, `the control agent saw no GC of the other JVM: nothing was left out\n${controlText.split('\n').filter((l) => l.includes('gc_pause_seconds_count')).join('\n')}`);
      assert.deepEqual(count(text, outside.pid), [], 'the JVM outside the configured container has GC series');
      assert.doesNotMatch(text, new RegExp(`^ebpf_studio_jvm_(gc_pause|safepoint)_seconds_count\\{[^}]*pid="${outside.pid}"`, 'm'));
      assert.match(text, /^ebpf_studio_jvms_traced 1$/m);
      for (const a of [agent, control.agent]) {
        a.child.kill('SIGTERM');
        assert.equal((await a.done).code, 0);
      }
    } finally {
      workloads.dispose();
      // The cgroup can go once its JVM is gone (dispose killed it if it was still running).
      assert.ok(await waitFor(() => !fs.readFileSync(path.join(scope, 'cgroup.procs'), 'utf8').trim(), 10_000), 'the test cgroup still has processes');
      fs.rmdirSync(scope);
    }
  });

  test('off-CPU and allocation pull endpoints: go tool pprof names where a workload sleeps and the top allocation line of a JVM; uncovered JVMs refused and invisible in profiles', { timeout: 90_000 }, async (t) => {
    if (!go) return t.skip('go is not installed (golang-go): go tool pprof is the reference reader of these endpoints');
    const heapSkip = javaAgentSkipReason(jdk!.home);
    if (heapSkip) return t.skip(heapSkip);
    // The sleeper: wait_long blocks 90 ms for each 30 ms wait_short blocks, in three threads. No
    // frame pointers (-O1 keeps the calls): its callers come from the kernel's table walk.
    const bin = path.join(work, 'offcpuwait');
    const cc = spawnSync('gcc', ['-g', '-O1', '-fomit-frame-pointer', '-pthread', path.join(repoRoot, 'test/fixtures/c/offcpuwait.c'), '-o', bin], { encoding: 'utf8' });
    assert.equal(cc.status, 0, `gcc failed: ${cc.stderr}`);
    const sleeper = spawn(bin, [], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(sleeper);
    let sleeperOut = '';
    sleeper.stdout!.on('data', (d) => (sleeperOut += d));
    // On CPU: the -O2 no-frame-pointer unwinding fixture (leaf, recursion, qsort through libc, its own library).
    const unwDir = path.join(work, 'unw');
    fs.mkdirSync(unwDir);
    const unwSkip = buildUnwindFixture(unwDir);
    const spinner = unwSkip ? undefined : spawn(path.join(unwDir, 'unwindfix'), ['all', '40'], { stdio: 'ignore' });
    if (spinner) children.push(spinner);
    // The allocator: one thread at 100 MB/s; per loop 1 byte[8192] (site A), 2 int[1024] (B), 10 char[100] (C): C makes 10/13 of the objects.
    const hsClasses = path.join(work, 'hs');
    const jc = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', hsClasses, path.join(repoRoot, 'test/fixtures/java/HeapSites.java')], { encoding: 'utf8' });
    assert.equal(jc.status, 0, jc.stderr);
    const heap = spawn(path.join(jdk!.home, 'bin', 'java'), ['-Xmx256m', '-cp', hsClasses, 'HeapSites', '1', '100000000', '0'], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(heap);
    let heapOut = '';
    heap.stdout!.on('data', (d) => (heapOut += d));
    // A JVM the config does not cover (Java's source launcher: its main class is not HeapSites).
    const idleSrc = path.join(work, 'Idle.java');
    fs.writeFileSync(idleSrc, 'public class Idle { public static void main(String[] a) throws Exception { Thread.sleep(120_000); } }\n');
    const idle = spawn(path.join(jdk!.home, 'bin', 'java'), ['-Xshare:auto', '-XX:TieredStopAtLevel=1', idleSrc], { stdio: 'ignore' });
    children.push(idle);

    // Only the pull endpoints matter here: the GC and run-queue tracers are off. Agent A covers
    // every process (the off-CPU endpoint, read by go tool pprof); agent B covers the HeapSites JVM
    // only (allocations, refusals, and profiles in which nothing else may be visible).
    const startAgent = async (name: string, mainClasses?: string[]) => {
      const cfg = path.join(work, `${name}.json`);
      fs.writeFileSync(cfg, JSON.stringify({ jvm: { enabled: false, ...(mainClasses ? { mainClasses } : {}) }, runqueue: { enabled: false } }));
      // go tool pprof reads these endpoints itself and sends no bearer token: no authentication here.
      const a = startCli(['agent', '--listen', '127.0.0.1:0', '--insecure-no-auth', '--config', cfg]);
      children.push(a.child);
      assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(a.stderr()), 30_000), `the agent did not start: ${a.stderr()}`);
      return { agent: a, base: /serving (http:\/\/[^/]+)\/metrics/.exec(a.stderr())![1] };
    };
    const [{ agent, base: allBase }, { agent: agentB, base }] = await Promise.all([startAgent('all'), startAgent('heapsites', ['HeapSites'])]);
    assert.ok(await waitFor(() => sleeperOut.includes('ready') && heapOut.includes('ready'), 20_000), `the workloads did not start: ${sleeperOut} ${heapOut}`);

    // Refusals, before anything is loaded: no pid, not a JVM, a JVM outside the config, a bad event.
    const get = async (u: string) => {
      const r = await fetch(`${base}${u}`);
      return { status: r.status, text: await r.text() };
    };
    const noPid = await get('/debug/pprof/allocs?seconds=1');
    assert.equal(noPid.status, 400);
    assert.match(noPid.text, /pid=/);
    const notJvm = await get(`/debug/pprof/allocs?seconds=1&pid=${sleeper.pid}`);
    assert.equal(notJvm.status, 400);
    assert.match(notJvm.text, /is not a JVM/);
    assert.ok(await waitFor(() => fs.readFileSync(`/proc/${idle.pid}/maps`, 'utf8').includes('libjvm.so'), 20_000), 'the uncovered JVM did not start');
    const uncovered = await get(`/debug/pprof/allocs?seconds=1&pid=${idle.pid}`);
    assert.equal(uncovered.status, 403, uncovered.text);
    assert.match(uncovered.text, /not a JVM this agent covers.*mainClasses/);
    const badEvent = await get('/debug/pprof/offcpu?seconds=1&event=idle');
    assert.equal(badEvent.status, 400);
    assert.match(badEvent.text, /event=wall/);

    // Off-CPU (go tool pprof and two more scrapers: one session) and allocations at the same time.
    const home = path.join(work, 'pprof-profiles');
    fs.mkdirSync(home);
    const offUrl = `${allBase}/debug/pprof/offcpu?seconds=4`;
    const offRun = goPprof(['-top', '-cum', '-focus=wait_(long|short)', '-nodecount=40'], offUrl, home);
    const allocRun = goPprof(['-sample_index=alloc_objects', '-top', '-lines', '-hide=\\[\\]$', '-nodecount=10'], `${base}/debug/pprof/allocs?seconds=4&pid=${heap.pid}`, home);
    await sleep(300);
    const bytes = (u: string) => fetch(u).then(async (r) => ({ status: r.status, bytes: Buffer.from(await r.arrayBuffer()) }));
    // Meanwhile agent B's CPU and off-CPU profiles: only HeapSites may be in them.
    const coveredRun = Promise.all([bytes(`${base}/debug/pprof/profile?seconds=4`), bytes(`${base}/debug/pprof/offcpu?seconds=4`)]);
    // and agent A's CPU profile of the spinner (6 s: its first second or two, while the tables
    // of the files met compile, is walked by frame pointers), perf --call-graph dwarf on it in the same seconds
    const cpuRun = spinner ? bytes(`${allBase}/debug/pprof/profile?seconds=6`) : undefined;
    const perfRun = spinner && perfBinary() ? sleep(2000).then(() => perfDwarf(spinner.pid!, 3, 99)) : undefined;
    const [a, b] = await Promise.all([bytes(offUrl), bytes(offUrl)]);
    assert.equal(a.status, 200);
    assert.equal(a.bytes[0], 0x1f, 'the off-CPU profile is gzipped');
    assert.ok(a.bytes.equals(b.bytes), 'two concurrent off-CPU scrapes got different profiles: more than one session ran');

    const off = await offRun;
    console.log(`go tool pprof -top -cum on /debug/pprof/offcpu:\n${off.out.split('\n').slice(0, 24).join('\n')}`);
    assert.equal(off.code, 0, off.out);
    assert.match(off.out, /^Type: off_cpu$/m);
    const cumOf = (fn: string) => {
      const m = new RegExp(`^\\s*\\S+\\s+\\S+\\s+\\S+\\s+(\\S+)\\s+\\S+\\s+${fn}$`, 'm').exec(off.out);
      return m ? pprofSeconds(m[1]) : 0;
    };
    const long = cumOf('wait_long');
    const short = cumOf('wait_short');
    assert.ok(long > 0 && short > 0, `go tool pprof does not name wait_long and wait_short:\n${off.out}`);
    // The workload blocks 3:1; a loaded machine's wakeup latency counts as off-CPU time too.
    console.log(`off-CPU by go tool pprof: wait_long ${long.toFixed(2)} s, wait_short ${short.toFixed(2)} s (${(long / short).toFixed(2)}:1; the workload blocks 3:1)`);
    assert.ok(long / short > 2 && long / short < 4.5, `wait_long ${long} s vs wait_short ${short} s: not the workload's 3:1`);
    const offWhole = wholeShare(loadProfileBytes(a.bytes, 'off-CPU').result!.stacks.filter((st) => st.pid === sleeper.pid), /^(start_thread|main)$/);
    t.diagnostic(`/debug/pprof/offcpu, the no-frame-pointer sleeper: ${pct(offWhole.whole, offWhole.walked)} of the time walked by its tables reaches start_thread or main; ${pct(offWhole.early, offWhole.all)} of it was walked before they were in`);
    assert.ok(offWhole.whole >= 0.9 * offWhole.walked, 'off-CPU stacks of code without frame pointers reach the thread start');
    if (cpuRun) await checkSpinnerProfile(t, await cpuRun, spinner!.pid!, perfRun);
    else t.diagnostic(`CPU profile of the unwinding fixture not taken: ${unwSkip}`);

    const alloc = await allocRun;
    console.log(`go tool pprof -sample_index=alloc_objects -top -lines on /debug/pprof/allocs:\n${alloc.out.split('\n').slice(0, 16).join('\n')}`);
    assert.equal(alloc.code, 0, alloc.out);
    assert.match(alloc.out, /^Type: alloc_objects$/m);
    const top = /flat\s+flat%\s+sum%\s+cum\s+cum%\n\s*\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(.+)$/m.exec(alloc.out)?.[1];
    const siteC = markerLines(path.join(repoRoot, 'test/fixtures/java/HeapSites.java'), /\/\/ site ([A-Z])\b/).get('C');
    assert.equal(top, `HeapSites.churn HeapSites.java:${siteC}`, `the top allocation line is not HeapSites.java:${siteC} (site C, 10 of every 13 objects):\n${alloc.out}`);

    // Only the processes the config covers are visible: agent A's off-CPU profile of the same
    // moment had the sleeper (go tool pprof named its functions above); agent B's have HeapSites only.
    const pidsIn = (r: { status: number; bytes: Buffer }, what: string) => {
      assert.equal(r.status, 200, `${what}: ${r.bytes.toString()}`);
      const counts = new Map<number, number>();
      for (const st of loadProfileBytes(r.bytes, what).result!.stacks) counts.set(st.pid, (counts.get(st.pid) ?? 0) + st.count);
      return counts;
    };
    const [cpuB, offB] = await coveredRun;
    const cpuPids = pidsIn(cpuB, 'CPU profile');
    const offPids = pidsIn(offB, 'off-CPU profile');
    const othersAll = loadProfileBytes(a.bytes, 'all').result!.stacks.filter((st) => st.pid !== heap.pid).length;
    t.diagnostic(`covered-only profiles: CPU ${[...cpuPids].map(([p, n]) => `pid ${p}: ${n}`).join(', ')}; off-CPU ${[...offPids].map(([p, n]) => `pid ${p}: ${n}`).join(', ')}; the uncovered agent's off-CPU profile had ${othersAll} stacks of other processes`);
    assert.ok(othersAll > 0, 'the reference profile (agent A) has no other process either');
    assert.deepEqual([...cpuPids.keys()], [heap.pid], 'the CPU profile of an agent covering HeapSites shows other processes (or not HeapSites)');
    assert.deepEqual([...offPids.keys()], [heap.pid], 'the off-CPU profile of an agent covering HeapSites shows other processes (or not HeapSites)');

    const m = await get('/metrics');
    assert.match(m.text, /ebpf_studio_tracer_up\{tracer="java-heap"\} 1/);
    const mAll = await (await fetch(`${allBase}/metrics`)).text();
    assert.match(mAll, /ebpf_studio_tracer_up\{tracer="offcpu"\} 1/);
    for (const ag of [agent, agentB]) {
      const ours = progIdsOf(ag.child.pid!);
      ag.child.kill('SIGTERM');
      assert.equal((await ag.done).code, 0);
      assert.deepEqual(programIdsLoaded(ours), [], 'BPF programs of the agent are still loaded after SIGTERM');
    }
    heap.stdin!.end();
    for (const c of [sleeper, idle, spinner]) c?.kill('SIGKILL');
  });

  test('one tracer failing does not stop the others: without CAP_SYS_ADMIN java-gc is down and says why, run-queue latency flows', { timeout: 60_000 }, async (t) => {
    if (!fs.existsSync('/usr/sbin/capsh')) return t.skip('capsh (libcap2-bin) is not installed');
    const child = spawn('/usr/sbin/capsh', ['--drop=cap_sys_admin', '--', '-c', `exec "${process.execPath}" "${cliJs}" agent --listen 127.0.0.1:0 --insecure-no-auth`], { stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(err), 30_000), err);
    const base = /serving (http:\/\/[^/]+)\/metrics/.exec(err)![1];
    assert.match(err, /java-gc could not start: .*Permission denied/);
    let text = '';
    assert.ok(
      await waitFor(() => {
        void fetch(`${base}/metrics`).then(async (r) => (text = await r.text()), () => undefined);
        return /ebpf_studio_runqueue_latency_seconds_count [1-9]/.test(text);
      }, 20_000, 500),
      `no run-queue latency while java-gc is down:\n${text}`,
    );
    assert.match(text, /ebpf_studio_tracer_up\{tracer="java-gc"\} 0/);
    assert.match(text, /ebpf_studio_tracer_up\{tracer="runqlat"\} 1/);
    assert.match(text, /ebpf_studio_attach_failures_total\{tracer="java-gc"\} [1-9]/);
    assert.match(text, /ebpf_studio_tracer_error_info\{tracer="java-gc",error="[^"]*Permission denied/);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, err);
  });

  test('run-queue latency per cgroup: a CPU-starved cgroup (CFS quota) has a clearly higher p99 than a free one, labelled by cgroup path', { timeout: 60_000 }, async (t) => {
    const cg = makeCgroupPair(`ebpf-studio-rq-${process.pid}`);
    if (typeof cg === 'string') return t.skip(cg);
    const cfg = path.join(work, 'cgroup.json');
    fs.writeFileSync(cfg, JSON.stringify({ jvm: { enabled: false }, profile: { enabled: false }, runqueue: { per: 'cgroup', intervalSeconds: 1 } }));
    // The same workload in both: 2 ms on CPU, 3 ms asleep, over and over (~40 % of a core). The
    // starved cgroup may use 5 ms per 200 ms period: once it used them, its thread waits runnable
    // until the next period.
    const loop = 'const a=new Int32Array(new SharedArrayBuffer(4));for(;;){const t=Date.now();while(Date.now()-t<2);Atomics.wait(a,0,0,3)}';
    const free = spawn(process.execPath, ['-e', loop], { stdio: 'ignore' });
    const starved = spawn(process.execPath, ['-e', loop], { stdio: 'ignore' });
    children.push(free, starved);
    let agent: ReturnType<typeof startCli> | undefined;
    try {
      cg.enter('free', free.pid!);
      cg.enter('starved', starved.pid!);
      const throttled0 = cg.throttled();
      agent = startCli(['agent', '--listen', '127.0.0.1:0', '--insecure-no-auth', '--config', cfg]);
      children.push(agent.child);
      assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(agent!.stderr()), 30_000), `the agent did not start: ${agent.stderr()}`);
      const base = /serving (http:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
      let text = '';
      const enough = () => {
        void fetch(`${base}/metrics`).then(async (r) => (text = await r.text()), () => undefined);
        const f = runqBuckets(text, cg.label('free'));
        const s = runqBuckets(text, cg.label('starved'));
        return f !== undefined && s !== undefined && f.count >= 200 && s.count >= 100;
      };
      assert.ok(await waitFor(enough, 40_000, 1000), `no per-cgroup series for ${cg.label('free')} and ${cg.label('starved')} (or too few waits):\n${text.split('\n').filter((l) => l.includes('runqueue_latency_seconds_count')).join('\n')}`);
      const f = runqBuckets(text, cg.label('free'))!;
      const s = runqBuckets(text, cg.label('starved'))!;
      const fp99 = quantile(f, 0.99);
      const sp99 = quantile(s, 0.99);
      const throttledBy = cg.throttled() - throttled0;
      t.diagnostic(`p99 run-queue wait: ${cg.label('starved')} ${(sp99 * 1000).toFixed(1)} ms over ${s.count} waits, ${cg.label('free')} ${(fp99 * 1000).toFixed(1)} ms over ${f.count}; the kernel throttled the starved cgroup ${throttledBy} times meanwhile (${cg.kind})`);
      // The kernel's own count says the quota bit: the waits behind it are up to ~195 ms long.
      assert.ok(throttledBy > 0, 'the kernel never throttled the starved cgroup: the CFS quota did not apply');
      assert.ok(sp99 >= 0.016, `the starved cgroup's p99 ${sp99 * 1000} ms is not a throttled wait`);
      assert.ok(sp99 >= 2 * fp99, `the starved cgroup's p99 ${sp99 * 1000} ms is not clearly above the free one's ${fp99 * 1000} ms`);
      // Series are bounded: nothing but cgroup labels (and "other") on the run-queue histogram.
      for (const m of text.matchAll(/^ebpf_studio_runqueue_latency_seconds_count\{([^}]*)\}/gm)) assert.match(m[1], /^cgroup="(\/[^"]*|other)"$/);
    } finally {
      agent?.child.kill('SIGTERM');
      free.kill('SIGKILL');
      starved.kill('SIGKILL');
      await Promise.all([free, starved].map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r)))));
      if (agent) await agent.done;
      cg.remove();
    }
  });

  test('kit histograms through Prometheus: biolatency I/Os of a loop disk as libbpf-tools biolatency -D counts them, tcplat connects and cpudist runs as the workload and our CLI do', { timeout: 120_000 }, async (t) => {
    const bio = '/usr/sbin/biolatency';
    if (!fs.existsSync(bio)) return t.skip(`${bio} is missing (apt-get install libbpf-tools)`);
    // A disk of its own: only the workload's I/O lands on it, so both tools' counts are exact whatever else the machine does.
    const backing = path.join('/var/tmp', `ebpf-studio-agent-loop-${process.pid}.img`);
    fs.writeFileSync(backing, '');
    fs.truncateSync(backing, 64 << 20);
    const lo = spawnSync('losetup', ['--find', '--show', '--direct-io=on', backing], { encoding: 'utf8' });
    if (lo.status !== 0) {
      fs.rmSync(backing, { force: true });
      return t.skip(`losetup could not attach a loop device: ${lo.stderr.trim()}`);
    }
    const dev = lo.stdout.trim();
    const disk = path.basename(dev);
    const cfg = path.join(work, 'histograms.json');
    const histograms = { biolatency: { per: 'disk', intervalSeconds: 1 }, tcplat: { per: 'address', intervalSeconds: 1 }, cpudist: { per: 'process', intervalSeconds: 1, maxSeries: 10000 } };
    fs.writeFileSync(cfg, JSON.stringify({ jvm: { enabled: false }, runqueue: { enabled: false }, profile: { enabled: false }, histograms }));
    const agent = startCli(['agent', '--listen', '127.0.0.1:0', '--insecure-no-auth', '--config', cfg]);
    children.push(agent.child);
    const listener = net.createServer((sock) => sock.destroy());
    try {
      assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(agent.stderr()), 30_000), `the agent did not start: ${agent.stderr()}`);
      const base = /serving (http:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
      const prom = await startPrometheus('histograms', Number(new URL(base).port), '1s');
      const bcc = spawn('stdbuf', ['-oL', bio, '-D'], { stdio: ['ignore', 'pipe', 'ignore'] });
      children.push(bcc);
      let bccOut = '';
      bcc.stdout!.on('data', (d) => (bccOut += d));
      const bccDone = new Promise((r) => bcc.on('exit', r));
      assert.ok(await waitFor(() => /Tracing block device I\/O/.test(bccOut), 20_000), `${bio} did not attach: ${bccOut}`);
      const cpu = await cpudistBeside();
      // The sleeper's runs before our CLI attached (its start-up) are the agent's alone: taken off once Prometheus has them.
      const runsQ = `sum(ebpf_studio_cpudist_seconds_count{pid="${cpu.pid}"})`;
      // (read from the agent itself, a read interval after the attach: a scrape may lag on a loaded machine)
      await sleep(2500);
      const early = await (await fetch(`${base}/metrics`)).text();
      const runsBefore = Number(new RegExp(`^ebpf_studio_cpudist_seconds_count\\{pid="${cpu.pid}",[^}]*\\} (\\d+)$`, 'm').exec(early)?.[1] ?? 0);
      // 127.0.0.2: an address nothing else on the machine connects to.
      await new Promise<void>((r) => listener.listen(0, '127.0.0.2', () => r()));
      const port = (listener.address() as net.AddressInfo).port;
      const CONNECTS = 200;
      for (let i = 0; i < CONNECTS; i++) await new Promise<void>((r) => net.connect(port, '127.0.0.2').on('connect', function (this: net.Socket) { this.destroy(); r(); }).on('error', () => r()));
      const IOS = 2000;
      const dd = spawnSync('sh', ['-c', `dd if=/dev/zero of=${dev} bs=4k count=${IOS} oflag=direct status=none && dd if=${dev} of=/dev/null bs=4k count=${IOS} iflag=direct status=none`]);
      assert.equal(dd.status, 0, String(dd.stderr));
      const cli = await cpu.run();

      // The agent reads each second and Prometheus scrapes each second: wait until Prometheus holds the final counts.
      // (the block layer may merge a few adjacent requests: both tools then count one)
      const queries = { io: `sum(ebpf_studio_biolatency_seconds_count{disk="${disk}"})`, connects: 'sum(ebpf_studio_tcplat_seconds_count{address="127.0.0.2"})', runs: runsQ };
      const got: Record<string, number | undefined> = {};
      let previous = '';
      const settled = async () => {
        for (const [k, q] of Object.entries(queries)) got[k] = await promQuery(prom.base, q).catch(() => undefined);
        const now = JSON.stringify(got);
        const same = now === previous;
        previous = now;
        return same && (got.io ?? 0) >= 2 * IOS * 0.99 && got.connects === CONNECTS && got.runs !== undefined;
      };
      const deadline = Date.now() + 30_000;
      while (!(await settled()) && Date.now() < deadline) await sleep(1500);
      got.runs = (got.runs ?? 0) - runsBefore;
      bcc.kill('SIGINT');
      await bccDone;
      const theirs = (parseBccHistograms(bccOut).get(disk) ?? []).reduce((a, b) => a + b[2], 0);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      const check = spawnSync(promtool!, ['check', 'metrics'], { input: metrics, encoding: 'utf8' });
      assert.equal(`${check.stdout}${check.stderr}`.trim(), '', `promtool check metrics reported: ${check.stdout}${check.stderr}`);
      t.diagnostic(`through Prometheus: ${got.io} I/Os on ${disk} (libbpf-tools biolatency -D: ${theirs}, dd: ${2 * IOS}); ${got.connects} connects to 127.0.0.2 (made: ${CONNECTS}); ${got.runs} on-CPU runs of pid ${cpu.pid} once our CLI had attached (ebpf-studio cpudist --pid: ${cli.runs}; ${runsBefore} before)`);
      assert.ok(theirs >= 2 * IOS * 0.99 && theirs <= 2 * IOS, `libbpf-tools biolatency -D counted ${theirs} I/Os on ${disk}, dd made ${2 * IOS}`);
      assert.equal(got.io, theirs, `Prometheus has ${got.io} I/Os on ${disk}, libbpf-tools biolatency ${theirs}`);
      assert.equal(got.connects, CONNECTS, `Prometheus has ${got.connects} connects to 127.0.0.2, the test made ${CONNECTS}`);
      assert.ok(got.runs !== undefined && Math.abs(got.runs - cli.runs) <= cli.runs * 0.03 + 5, `Prometheus has ${got.runs} runs of pid ${cpu.pid}, ebpf-studio cpudist --pid ${cli.runs}`);
      prom.child.kill('SIGTERM');
    } finally {
      listener.close();
      agent.child.kill('SIGTERM');
      await agent.done;
      spawnSync('losetup', ['-d', dev]);
      fs.rmSync(backing, { force: true });
    }
  });

  test('function latency through Prometheus: a program started later and its copy in a container (own mount namespace and file, docker-ID.scope cgroup) counted as they count; bad entries say why; attack: a user’s own program at that path (user namespace) is not counted', { timeout: 60_000 }, async (t) => {
    const root = cgroup2Mount();
    if (!root) return t.skip('no cgroup2 file system is mounted: the copy cannot be put into a container-like cgroup');
    if (spawnSync('gcc', ['--version']).status !== 0) return t.skip('gcc is missing');
    if (spawnSync('unshare', ['--mount', 'true']).status !== 0) return t.skip('unshare --mount does not work here');
    // The latency fixture: 90 % of its lat_work calls sleep 1 ms, 10 % 20 ms; it prints its own count.
    const fix = path.join(work, 'latfix');
    const fixtures = path.join(__dirname, '..', 'fixtures', 'c', 'latency');
    const cc = spawnSync('gcc', ['-O2', '-g', '-pthread', '-o', fix, path.join(fixtures, 'main.c'), path.join(fixtures, 'work.c')], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    // A C++ function that throws through itself in 10 of its 52 calls: the program must live (its returns probed at its ret instructions).
    const thrower = path.join(work, 'latthrow');
    const cxx = spawnSync('g++', ['-O2', '-g', '-o', thrower, path.join(fixtures, '..', '..', 'cpp', 'latency_throw.cpp')], { encoding: 'utf8' });
    assert.equal(cxx.status, 0, cxx.stderr);
    // The container's copy: a file of its own (a tmpfs only its mount namespace has), at a path the host lacks.
    const innerDir = `/mnt/ebpf-studio-lat-${process.pid}`;
    const inner = `${innerDir}/latfix`;
    const id = crypto.randomBytes(32).toString('hex');
    const scope = path.join(root, `docker-${id}.scope`);
    fs.mkdirSync(scope);
    const cfg = path.join(work, 'latency.json');
    const latency = [
      { binary: fix, function: 'lat_work', labels: { fixture: 'host' }, intervalSeconds: 1 },
      { binary: inner, function: 'lat_work', intervalSeconds: 1 },
      { binary: thrower, function: 'lat_parse', intervalSeconds: 1 },
      { binary: fix, function: 'scale', intervalSeconds: 1 },
      { binary: fix, function: 'no_such_function', intervalSeconds: 1 },
      { binary: `/nonexistent-${process.pid}/prog`, function: 'f', intervalSeconds: 1 },
    ];
    fs.writeFileSync(cfg, JSON.stringify({ jvm: { enabled: false }, runqueue: { enabled: false }, profile: { enabled: false }, latency }));
    const agent = startCli(['agent', '--listen', '127.0.0.1:0', '--insecure-no-auth', '--config', cfg]);
    children.push(agent.child);
    const programs: ChildProcess[] = [];
    // The attack: an unprivileged user runs a program of their own at the container copy's path,
    // in a user and mount namespace of their own, to have its calls counted as the container's.
    const canAttack = attackSkipReason() === undefined && spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'unshare', '-rm', 'true']).status === 0;
    let user: AttackUser | undefined;
    const theirSource = path.join(os.tmpdir(), `ebpf-studio-latfix-${process.pid}`);
    try {
      assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(agent.stderr()), 30_000), `the agent did not start: ${agent.stderr()}`);
      const base = /serving (http:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
      const prom = await startPrometheus('latency', Number(new URL(base).port), '1s');
      // Both start after the agent: the host's through its file's probes, the copy once a look finds it.
      const run = (cmd: string, args: string[]) => {
        const p = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });
        children.push(p);
        programs.push(p);
        let out = '';
        p.stdout!.on('data', (d) => (out += d));
        return { p, out: () => out };
      };
      const host = run(fix, ['calls', '300']);
      const boxed = run('sh', ['-c', `echo $$ > ${scope}/cgroup.procs && exec unshare --mount --propagation private sh -c 'mount -t tmpfs none /mnt && mkdir ${innerDir} && cp ${fix} ${inner} && exec ${inner} calls 200'`]);
      const throws = run(thrower, ['52']);
      let attacker: { p: ChildProcess; out: () => string } | undefined;
      if (canAttack) {
        user = makeUser(`ebpfL${process.pid % 100000}`);
        fs.copyFileSync(fix, theirSource);
        fs.chmodSync(theirSource, 0o755);
        const p = spawnAsUser(user, ['unshare', '-rm', 'sh', '-c', `mount -t tmpfs none /mnt && mkdir ${innerDir} && cp ${theirSource} ${inner} && exec ${inner} calls 400`], {}, children);
        programs.push(p);
        let out = '';
        p.stdout!.on('data', (d) => (out += d));
        attacker = { p, out: () => out };
      } else t.diagnostic('the attack part is skipped: unprivileged users cannot make user namespaces here, or setpriv/useradd is missing');
      const all = [host, boxed, throws, ...(attacker ? [attacker] : [])];
      assert.ok(await waitFor(() => all.every((f) => f.out().includes('ready')), 10_000), `the fixtures did not start: ${all.map((f) => f.out()).join(' ')}`);
      const up = (text: string, entry: string) => new RegExp(`^ebpf_studio_tracer_up\\{tracer="latency:${entry}"\\} 1$`, 'm').test(text);
      let text = '';
      for (const end = Date.now() + 10_000; Date.now() < end && !up(text, `${inner}:lat_work`); await sleep(250)) text = await (await fetch(`${base}/metrics`)).text();
      assert.ok(up(text, `${inner}:lat_work`), `the copy was not found:\n${agent.stderr()}`);
      assert.ok(up(text, `${fix}:lat_work`), text);
      // a look with the attacker's process running (they look every second)
      if (attacker) await sleep(1500);
      for (const f of all) f.p.stdin!.write('g');
      assert.ok(await waitFor(() => all.every((f) => /result count=/.test(f.out())), 20_000), 'the fixtures did not finish');
      const thrown = /result count=(\d+) thrown=(\d+)/.exec(throws.out())!;
      const returned = Number(thrown[1]) - Number(thrown[2]);
      const own = (out: string) => {
        const m = /result count=(\d+) total_ns=(\d+) p50_ns=(\d+) p99_ns=(\d+) slow10ms=(\d+)/.exec(out)!;
        return { count: Number(m[1]), totalS: Number(m[2]) / 1e9, p50S: Number(m[3]) / 1e9, p99S: Number(m[4]) / 1e9, slow: Number(m[5]) };
      };
      const mine = { host: own(host.out()), boxed: own(boxed.out()) };
      const short = id.slice(0, 12);
      const sel = { host: `binary="${fix}",fixture="host"`, boxed: `binary="${inner}",container="${short}",container_id="${short}"` };
      // every series of the copy's path: the attacker's calls would be in one without container labels
      const q = (which: 'host' | 'boxed') => `sum(ebpf_studio_function_latency_seconds_count{${which === 'host' ? sel.host : `binary="${inner}"`}})`;
      const got: Record<string, number | undefined> = {};
      const qThrow = `sum(ebpf_studio_function_latency_seconds_count{binary="${thrower}"})`;
      for (const end = Date.now() + 20_000; Date.now() < end; await sleep(1000)) {
        for (const w of ['host', 'boxed'] as const) got[w] = await promQuery(prom.base, q(w)).catch(() => undefined);
        got.throws = await promQuery(prom.base, qThrow).catch(() => undefined);
        if (got.host === mine.host.count && got.boxed === mine.boxed.count && got.throws === returned) break;
      }
      const p = async (which: 'host' | 'boxed', qq: number) => promQuery(prom.base, `histogram_quantile(${qq}, sum by (le) (ebpf_studio_function_latency_seconds_bucket{${sel[which]}}))`);
      const quant = { p50: await p('host', 0.5), p99: await p('host', 0.99) };
      text = await (await fetch(`${base}/metrics`)).text();
      t.diagnostic(`Prometheus: ${got.host} calls of lat_work on the host (the program: ${mine.host.count}), ${got.boxed} in the container's copy (the program: ${mine.boxed.count}), ${got.throws} of lat_parse (returned: ${returned}); host p50 ${quant.p50} s, p99 ${quant.p99} s (the program: ${mine.host.p50S}, ${mine.host.p99S})`);
      assert.equal(got.host, mine.host.count, `Prometheus has ${got.host} calls on the host, the program made ${mine.host.count}`);
      assert.equal(got.boxed, mine.boxed.count, `Prometheus has ${got.boxed} calls of ${inner}, the container's program made ${mine.boxed.count}${attacker ? ` and the attacker's ${own(attacker.out()).count}` : ''}`);
      if (attacker) assert.equal(own(attacker.out()).count, 400, "the attacker's program did not run");
      assert.equal(got.throws, returned, `Prometheus has ${got.throws} calls of lat_parse, ${returned} of the program's returned (the others threw)`);
      throws.p.stdin!.end();
      assert.equal(await new Promise((r) => (throws.p.exitCode !== null ? r(throws.p.exitCode) : throws.p.once('exit', (c) => r(c)))), 0, 'the C++ program did not live through its exceptions');
      for (const w of ['host', 'boxed'] as const) {
        const cum = new Map([...text.matchAll(new RegExp(`^ebpf_studio_function_latency_seconds_bucket\\{function="lat_work",${sel[w]},le="([^"]+)"\\} (\\d+)$`, 'gm'))].map((m) => [m[1], Number(m[2])]));
        const values = [...cum.values()];
        assert.ok(values.length === 26 && values.every((v, i) => i === 0 || v >= values[i - 1]), `${w}: buckets not cumulative: ${[...cum].join(' ')}`);
        assert.equal(cum.get('+Inf'), mine[w].count);
        // Every call sleeps at least 1 ms. The probes time a call from inside the program's own
        // clock readings (a few µs less): the calls it timed under 10 ms are all under 16.4 ms here,
        // and those at 10 ms or more are none under 8.2 ms, however loaded the machine.
        assert.equal(cum.get('0.000512'), 0, `${w}: calls under 0.5 ms: ${[...cum].join(' ')}`);
        const under10 = mine[w].count - mine[w].slow;
        assert.ok(cum.get('0.008192')! <= under10 && under10 <= cum.get('0.016384')!, `${w}: ${cum.get('0.008192')} calls under 8.2 ms and ${cum.get('0.016384')} under 16.4 ms, the program timed ${under10} under 10 ms: ${[...cum].join(' ')}`);
        const sum = Number(new RegExp(`^ebpf_studio_function_latency_seconds_sum\\{function="lat_work",${sel[w]}\\} (\\S+)$`, 'm').exec(text)?.[1]);
        // estimated at bucket middles (each call at most 1.5 times its own length, at least 0.75 times)
        assert.ok(sum >= 0.75 * mine[w].totalS && sum <= 1.5 * mine[w].totalS, `${w}: _sum ${sum} s, the program's total ${mine[w].totalS} s`);
      }
      // histogram_quantile lands in the log2 bucket the program's own percentile is in (or the one
      // below, when the program's value is within its clock readings of the bucket's lower edge)
      const bucketOf = (s: number) => Math.floor(Math.log2(s * 1e6));
      for (const [k, ours, theirs] of [['p50', quant.p50!, mine.host.p50S], ['p99', quant.p99!, mine.host.p99S]] as const) {
        assert.ok([bucketOf(theirs), bucketOf(theirs * 0.97)].includes(bucketOf(ours)), `${k}: histogram_quantile ${ours} s, the program ${theirs} s`);
      }
      // bad entries: down, each with its reason; the good ones ran beside them
      const why = (entry: string) => new RegExp(`^ebpf_studio_tracer_error_info\\{tracer="latency:${entry.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}",error="([^"]*)"\\} 1$`, 'm').exec(text)?.[1];
      assert.match(why(`${fix}:scale`) ?? '', /scale is inlined into its callers everywhere in .*latfix: it has no entry of its own to probe/);
      assert.match(why(`${fix}:no_such_function`) ?? '', /no function no_such_function in .*latfix/);
      assert.match(why(`/nonexistent-${process.pid}/prog:f`) ?? '', /is not a file on this machine and no running process runs a file of that name/);
      assert.match(agent.stderr(), /latency:.*:scale could not start: .*inlined/);
      const check = spawnSync(promtool!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      assert.equal(`${check.stdout}${check.stderr}`.trim(), '', `promtool check metrics reported: ${check.stdout}${check.stderr}`);
      prom.child.kill('SIGTERM');
      const ours = progIdsOf(agent.child.pid!);
      assert.ok(ours.some((id) => loadedPrograms().some((p) => p.id === id && p.name.startsWith('lat_'))), 'the agent holds no latency probes');
      agent.child.kill('SIGTERM');
      assert.equal((await agent.done).code, 0, agent.stderr());
      assert.deepEqual(programIdsLoaded(ours), [], 'BPF programs of the agent are still loaded after SIGTERM');
    } finally {
      agent.child.kill('SIGTERM');
      for (const p of programs) p.stdin!.end();
      for (const p of programs) if (p.exitCode === null && p.signalCode === null) await new Promise((r) => p.once('exit', r));
      assert.ok(await waitFor(() => !fs.readFileSync(path.join(scope, 'cgroup.procs'), 'utf8').trim(), 10_000), 'the test cgroup still has processes');
      fs.rmdirSync(scope);
      fs.rmSync(theirSource, { force: true });
      removeUser(user);
    }
  });

  test('bad input: port in use, unreadable or invalid config (line named), non-loopback without TLS', { timeout: 60_000 }, async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const r = runCli(['agent', '--listen', `127.0.0.1:${port}`, '--insecure-no-auth'], { timeoutMs: 30_000 });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /in use/);
      assert.match(r.stderr, /--listen/);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'a stack trace');
    } finally {
      busy.close();
    }

    const missing = runCli(['agent', '--config', path.join(work, 'nope.json')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /does not exist/);
    const folder = runCli(['agent', '--config', work]);
    assert.equal(folder.code, 2);
    assert.match(folder.stderr, /is a folder/);

    const syntax = path.join(work, 'syntax.json');
    fs.writeFileSync(syntax, '{\n  "jvm": { "enabled": true },\n  "runqueue": { "per": "pidns", }\n}\n');
    const s = runCli(['agent', '--config', syntax]);
    assert.equal(s.code, 2, s.stderr);
    assert.match(s.stderr, new RegExp(`${syntax.replace(/[.]/g, '\\.')}:3: not valid JSON`));

    const semantic = path.join(work, 'semantic.json');
    fs.writeFileSync(semantic, '{\n  "jvm": { "mainClasses": ["com.example.Main"] },\n  "runqueue": {\n    "per": "container"\n  }\n}\n');
    const m = runCli(['agent', '--config', semantic]);
    assert.equal(m.code, 2, m.stderr);
    assert.match(m.stderr, /semantic\.json:4: runqueue\.per must be "system", "pidns" or "cgroup", not "container"/);

    const typo = path.join(work, 'typo.json');
    fs.writeFileSync(typo, '{\n  "jvm": {\n    "mainClass": "x"\n  }\n}\n');
    const t = runCli(['agent', '--config', typo]);
    assert.equal(t.code, 2, t.stderr);
    assert.match(t.stderr, /typo\.json:3: jvm\.mainClass is not a known key: use one of enabled, mainClasses, containers, minPauseUs/);

    // Closed by default: no token, no start; a config others may write is refused.
    const noToken = runCli(['agent', '--listen', '127.0.0.1:0', '--token-file', path.join(work, 'none.token')]);
    assert.equal(noToken.code, 2, noToken.stderr);
    assert.match(noToken.stderr, /none\.token does not exist, and the agent requires a token by default.*--make-token.*--insecure-no-auth/);
    const writable = path.join(work, 'writable.json');
    fs.writeFileSync(writable, '{}');
    fs.chmodSync(writable, 0o664);
    const w = runCli(['agent', '--config', writable, '--insecure-no-auth']);
    assert.equal(w.code, 2, w.stderr);
    assert.match(w.stderr, /writable\.json is writable by its group \(mode 0664\): run chmod go-w/);

    const open = runCli(['agent', '--listen', '0.0.0.0:9435']);
    assert.equal(open.code, 2, open.stderr);
    assert.match(open.stderr, /refusing to listen on 0\.0\.0\.0:9435 without TLS/);
    assert.match(open.stderr, /"tls"/);
    assert.match(open.stderr, /--listen 127\.0\.0\.1:9435/);
  });

  test('TLS and a bearer token: 401 without it, metrics with it', { timeout: 60_000 }, async (t) => {
    const openssl = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', path.join(work, 'key.pem'), '-out', path.join(work, 'cert.pem')], { encoding: 'utf8' });
    if (openssl.status !== 0) return t.skip(`openssl could not make a certificate: ${openssl.stderr}`);
    const token = 'a'.repeat(40);
    fs.writeFileSync(path.join(work, 'token'), token, { mode: 0o600 });
    const cfg = path.join(work, 'tls.json');
    // Tracers off: this checks the endpoint's security, not the probes.
    fs.writeFileSync(cfg, JSON.stringify({ tls: { certFile: path.join(work, 'cert.pem'), keyFile: path.join(work, 'key.pem') }, auth: { bearerTokenFile: path.join(work, 'token') }, jvm: { enabled: false }, runqueue: { enabled: false } }));
    const agent = startCli(['agent', '--listen', '127.0.0.1:0', '--config', cfg]);
    children.push(agent.child);
    assert.ok(await waitFor(() => /serving (https:\/\/[^/]+)\/metrics/.test(agent.stderr()), 30_000), agent.stderr());
    const base = /serving (https:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
    const curl = (extra: string[]) => spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', path.join(work, 'cert.pem'), ...extra, `${base}/metrics`], { encoding: 'utf8' }).stdout;
    assert.equal(curl([]), '401');
    assert.equal(curl(['-H', 'Authorization: Bearer wrong-token-wrong-token']), '401');
    assert.equal(curl(['-H', `Authorization: Bearer ${token}`]), '200');
    agent.child.kill('SIGTERM');
    assert.equal((await agent.done).code, 0);
  });
});
