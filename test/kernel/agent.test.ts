// The fleet agent against the real engines: Debian's Prometheus scrapes `ebpf-studio agent` on
// loopback every 2 s while a JVM (test/fixtures/java/GcWorkload.java, -XX:+UseSerialGC) makes its
// GCs with -Xlog:gc to a file; a PromQL query through Prometheus's HTTP API must count exactly the
// pauses the JVM logged, histogram_quantile must give a p99 near the log's own, promtool must find
// nothing wrong with a scrape, and `go tool pprof -top` on the pull endpoint must name the hot
// Java method of a second JVM (test/fixtures/java/HotMethod.java). SIGTERM must leave none of the
// agent's BPF programs loaded. Bad input: a port in use, an unreadable or invalid config (exit 2,
// the line at fault), a non-loopback address without TLS (refused, with the fix).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { cliJs, kernelSkipReason, programIdsLoaded, runCli, sleep, startCli, waitFor } from '../helpers';
import { GcWorkloads, jdk, noJdkReason } from './gcWorkload';

const prometheus = ['/usr/bin/prometheus'].find((p) => fs.existsSync(p));
const promtool = ['/usr/bin/promtool'].find((p) => fs.existsSync(p));
const go = ['/usr/bin/go', '/usr/lib/go/bin/go'].find((p) => fs.existsSync(p));
const skip = kernelSkipReason() ?? noJdkReason ?? (!prometheus || !promtool ? "Debian's prometheus package is not installed (scripts/install-deps.sh --test)" : undefined);

let work = '';
const children: ChildProcess[] = [];

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

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

async function promQuery(base: string, q: string): Promise<number | undefined> {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as { status: string; data?: { result: { value: [number, string] }[] } };
  assert.equal(body.status, 'success', `query ${q} failed: ${JSON.stringify(body)}`);
  const v = body.data!.result[0]?.value[1];
  return v === undefined ? undefined : Number(v);
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
      const agent = startCli(['agent', '--listen', '127.0.0.1:0', '--verbose']);
      children.push(agent.child);
      assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(agent.stderr()), 30_000), `the agent did not start: ${agent.stderr()}`);
      const base = /serving (http:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
      const agentPort = Number(new URL(base).port);
      const ours = progIdsOf(agent.child.pid!);
      assert.ok(ours.length > 0, 'the agent holds no BPF programs');

      // Prometheus, scraping the agent every 2 s.
      const promPort = await freePort();
      const promCfg = path.join(work, 'prometheus.yml');
      fs.writeFileSync(promCfg, `global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\nscrape_configs:\n  - job_name: ebpf-studio\n    static_configs:\n      - targets: ['127.0.0.1:${agentPort}']\n`);
      const prom = spawn(prometheus!, [`--config.file=${promCfg}`, `--storage.tsdb.path=${path.join(work, 'tsdb')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'ignore', 'pipe'] });
      children.push(prom);
      let promLog = '';
      prom.stderr!.on('data', (d) => (promLog += d));
      const promBase = `http://127.0.0.1:${promPort}`;
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

      // go tool pprof and a second scraper at the same time: one sampling session serves both.
      const pprofUrl = `${base}/debug/pprof/profile?seconds=5`;
      const pprofHome = path.join(work, 'pprof-home');
      fs.mkdirSync(pprofHome);
      const pprofRun = go
        ? new Promise<{ code: number | null; out: string }>((resolve) => {
            const p = spawn(go, ['tool', 'pprof', '-top', '-nodecount=30', pprofUrl], { env: { ...process.env, HOME: pprofHome, PPROF_TMPDIR: pprofHome } });
            let o = '';
            p.stdout.on('data', (d) => (o += d));
            p.stderr.on('data', (d) => (o += d));
            p.on('exit', (code) => resolve({ code, out: o }));
          })
        : undefined;
      await sleep(300);
      const [a, b] = await Promise.all([fetch(pprofUrl).then(async (r) => ({ status: r.status, bytes: Buffer.from(await r.arrayBuffer()) })), fetch(pprofUrl).then(async (r) => ({ status: r.status, bytes: Buffer.from(await r.arrayBuffer()) }))]);
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.equal(a.bytes[0], 0x1f, 'the profile is gzipped');
      assert.ok(a.bytes.equals(b.bytes), 'two concurrent scrapes got different profiles: more than one sampling session ran');

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
        void fetch(`${base}/metrics`).then(async (r) => (metrics = await r.text()), () => undefined);
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
      assert.equal(count, logged.length, `Prometheus counted ${count} GC pauses, -Xlog:gc logged ${logged.length}\n${promLog.slice(-2000)}`);
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
      prom.kill('SIGTERM');
    } finally {
      workloads.dispose();
    }
  });

  test('one tracer failing does not stop the others: without CAP_SYS_ADMIN java-gc is down and says why, run-queue latency flows', { timeout: 60_000 }, async (t) => {
    if (!fs.existsSync('/usr/sbin/capsh')) return t.skip('capsh (libcap2-bin) is not installed');
    const child = spawn('/usr/sbin/capsh', ['--drop=cap_sys_admin', '--', '-c', `exec "${process.execPath}" "${cliJs}" agent --listen 127.0.0.1:0`], { stdio: ['ignore', 'ignore', 'pipe'] });
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

  test('bad input: port in use, unreadable or invalid config (line named), non-loopback without TLS', { timeout: 60_000 }, async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const r = runCli(['agent', '--listen', `127.0.0.1:${port}`], { timeoutMs: 30_000 });
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
    fs.writeFileSync(semantic, '{\n  "jvm": { "mainClasses": ["com.example.Main"] },\n  "runqueue": {\n    "per": "cgroup"\n  }\n}\n');
    const m = runCli(['agent', '--config', semantic]);
    assert.equal(m.code, 2, m.stderr);
    assert.match(m.stderr, /semantic\.json:4: runqueue\.per cgroup is not supported.*pidns/);

    const typo = path.join(work, 'typo.json');
    fs.writeFileSync(typo, '{\n  "jvm": {\n    "mainClass": "x"\n  }\n}\n');
    const t = runCli(['agent', '--config', typo]);
    assert.equal(t.code, 2, t.stderr);
    assert.match(t.stderr, /typo\.json:3: jvm\.mainClass is not a known key: use one of enabled, mainClasses, minPauseUs/);

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
