// The fleet agent's pure parts: the config reader (every error names the line at fault and the
// fix), the Prometheus exposition (cumulative buckets, escaping, a histogram_quantile-ready
// shape; promtool, when installed, finds nothing to say about it), the listen address rules, and
// the editor's URL check, and the pull endpoints' parameters (a loopback server whose profilers
// are stand-ins: which one a request reaches, with what, and how a refusal is answered).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { parseConfig, DEFAULT_CONFIG } from '../../extension/agent/config';
import { Exposition, Histograms, PAUSE_BUCKETS_S, RUNQ_BUCKETS_S, escapeLabel } from '../../extension/agent/exposition';
import { isLoopback, listen, parseListen, prepareListen, RequestError, type Endpoints } from '../../extension/agent/server';
import { StudioError } from '../../extension/protocol/errors';
import { CgroupNames, cgroup2Mount, parseProcCgroup } from '../../extension/sys/cgroup';
import { JvmSelector, containerIds, containerLabel } from '../../extension/agent/select';
import { KitExport } from '../../extension/agent/kitMetrics';
import { FUNCTION_LATENCY_HELP, FUNCTION_LATENCY_METRIC, LatencyExport } from '../../extension/agent/latencyMetrics';
import { ContainerLookup } from '../../extension/sys/proc/container';
import type { HistUpdate } from '../../extension/protocol/histogram';

function configError(text: string): string {
  try {
    parseConfig(text, 'agent.json');
  } catch (e) {
    assert.ok(e instanceof StudioError);
    assert.equal(e.kind, 'input');
    return e.message;
  }
  assert.fail('no error');
}

test('config: defaults, every section, and errors that name their line', () => {
  assert.deepEqual(parseConfig('{}', 'a.json'), DEFAULT_CONFIG);
  const c = parseConfig(JSON.stringify({ listen: '0.0.0.0:9435', jvm: { mainClasses: ['com.x.Main'], minPauseUs: 50 }, runqueue: { per: 'pidns', intervalSeconds: 2 }, profile: { frequency: 49, maxSeconds: 20, allocs: false }, forgetExitedAfterSeconds: 0 }), 'a.json');
  assert.deepEqual(c.jvm, { enabled: true, mainClasses: ['com.x.Main'], minPauseUs: 50 });
  assert.deepEqual(c.runqueue, { enabled: true, per: 'pidns', intervalSeconds: 2, maxCgroups: 100 });
  assert.deepEqual(parseConfig('{"runqueue": {"per": "cgroup", "maxCgroups": 5}}', 'a.json').runqueue, { enabled: true, per: 'cgroup', intervalSeconds: 60, maxCgroups: 5 });
  assert.deepEqual(c.profile, { enabled: true, frequency: 49, maxSeconds: 20, offcpu: true, allocs: false });
  assert.equal(c.forgetExitedAfterSeconds, 0);

  assert.match(configError('{\n  "jvm": {\n    "enabled": true,\n  }\n}'), /^agent\.json:4: not valid JSON/);
  assert.match(configError('{\n  "jvm": {\n'), /^agent\.json:3: not valid JSON/);
  assert.match(configError('[]'), /the file must be a JSON object/);
  assert.match(configError('{\n "profile": {\n  "frequency": 0\n }\n}'), /^agent\.json:3: profile\.frequency must be a whole number from 1 to 10000, not 0/);
  assert.match(configError('{\n "runqueue": {"per": "container"}\n}'), /^agent\.json:2: runqueue\.per must be "system", "pidns" or "cgroup", not "container"/);
  assert.match(configError('{\n "runqueue": {\n  "maxCgroups": 0}\n}'), /^agent\.json:3: runqueue\.maxCgroups must be a whole number from 1 to 10000/);
  assert.match(configError('{\n "jvm": {}, "jvms": {}\n}'), /^agent\.json:2: jvms is not a known key/);
  assert.match(configError('{\n "jvm": {\n  "mainClasses": []\n }\n}'), /^agent\.json:3: jvm\.mainClasses must be a non-empty list/);
  assert.deepEqual(parseConfig('{"jvm": {"containers": ["4f1c2e9a0b7d", "/machine.slice/systemd-nspawn@web.service"]}}', 'a.json').jvm.containers, ['4f1c2e9a0b7d', '/machine.slice/systemd-nspawn@web.service']);
  assert.match(configError('{\n "jvm": {\n  "mainClasses": ["A"],\n  "containers": []\n }\n}'), /^agent\.json:4: jvm\.containers must be a non-empty list/);
  assert.match(configError('{\n "jvm": {\n  "containers": ["web-1"]\n }\n}'), /^agent\.json:3: jvm\.containers has "web-1": each entry must be a container id \(12 to 64 hex digits.*or a cgroup v2 path pattern starting with \//);
  assert.match(configError('{\n "jvm": {\n  "containers": ["4F1C2E9A0B7D"]\n }\n}'), /^agent\.json:3: jvm\.containers has "4F1C2E9A0B7D"/);
  assert.match(configError('{\n "jvm": {\n  "containers": ["abc123"]\n }\n}'), /^agent\.json:3: jvm\.containers has "abc123"/);
  assert.match(configError('{\n "jvm": {\n  "containers": "/docker"\n }\n}'), /^agent\.json:3: jvm\.containers must be a non-empty list/);
  assert.deepEqual(parseConfig('{"jvm": {"launchers": ["orderservice", "a-launcher-name-over-15-bytes"]}}', 'a.json').jvm.launchers, ['orderservice', 'a-launcher-name-over-15-bytes']);
  assert.match(configError('{\n "jvm": {\n  "launchers": ["/opt/app/bin/orderservice"]\n }\n}'), /^agent\.json:3: jvm\.launchers has "\/opt\/app\/bin\/orderservice": each entry must be a program name, not a path/);
  assert.match(configError('{\n "jvm": {\n  "launchers": []\n }\n}'), /^agent\.json:3: jvm\.launchers must be a list of at most 24 program names/);
  assert.match(configError(`{"jvm": {"launchers": ${JSON.stringify(Array.from({ length: 25 }, (_, i) => `l${i}`))}}}`), /jvm\.launchers must be a list of at most 24/);
  assert.match(configError('{\n "tls": {"certFile": "c.pem"}\n}'), /^agent\.json:2: tls needs both certFile and keyFile/);
  assert.match(configError('{\n "auth": {}\n}'), /^agent\.json:2: auth needs bearerTokenFile or basicAuthFile/);
});

test('listen addresses: loopback by default, anything else needs TLS and auth', () => {
  assert.deepEqual(parseListen('127.0.0.1:9435'), { host: '127.0.0.1', port: 9435 });
  assert.deepEqual(parseListen('[::1]:80'), { host: '::1', port: 80 });
  assert.deepEqual(parseListen(':9435'), { host: '0.0.0.0', port: 9435 });
  assert.throws(() => parseListen('9435'), /is not HOST:PORT/);
  assert.throws(() => parseListen('127.0.0.1:70000'), /out of range/);
  assert.ok(isLoopback('127.0.0.1') && isLoopback('::1') && isLoopback('localhost') && isLoopback('127.1.2.3'));
  assert.ok(!isLoopback('0.0.0.0') && !isLoopback('10.0.0.1') && !isLoopback('::'));
  // Closed by default: no auth in the config means the install's token, and no token means no start.
  const noToken = path.join(os.tmpdir(), `ebpf-studio-no-token-${process.pid}`);
  assert.throws(() => prepareListen({ host: '127.0.0.1', port: 9435 }, DEFAULT_CONFIG, { tokenFile: noToken }), (e: StudioError) => e.kind === 'input' && /does not exist/.test(e.message) && /--make-token/.test(e.message) && /--insecure-no-auth/.test(e.message));
  assert.deepEqual(prepareListen({ host: '127.0.0.1', port: 9435 }, DEFAULT_CONFIG, { insecureNoAuth: true }), { auth: undefined, insecure: true });
  assert.throws(() => prepareListen({ host: '0.0.0.0', port: 9435 }, DEFAULT_CONFIG, { insecureNoAuth: true }), (e: StudioError) => e.kind === 'usage' && /"tls"/.test(e.message) && /authentication/.test(e.message) && /--listen 127\.0\.0\.1:9435/.test(e.message));
});

test('exposition: cumulative buckets, +Inf equals _count, labels escaped', () => {
  const h = new Histograms(PAUSE_BUCKETS_S);
  const labels = { main_class: 'com.x.Main', pid: '42', collector: 'Copy', kind: 'young' };
  for (const v of [0.000005, 0.00003, 0.0011, 0.0011, 0.4, 20]) h.observe(labels, v);
  const text = new Exposition().histogram('ebpf_studio_jvm_gc_pause_seconds', 'GC pauses', h).text();
  const bucket = (le: string) => Number(new RegExp(`_bucket\\{main_class="com.x.Main",pid="42",collector="Copy",kind="young",le="${le.replace(/[.+]/g, '\\$&')}"\\} (\\d+)`).exec(text)?.[1]);
  assert.equal(bucket('0.00001'), 1);
  assert.equal(bucket('0.00005'), 2);
  assert.equal(bucket('0.002'), 4);
  assert.equal(bucket('0.5'), 5);
  assert.equal(bucket('10'), 5);
  assert.equal(bucket('+Inf'), 6);
  assert.match(text, /_count\{main_class="com.x.Main",pid="42",collector="Copy",kind="young"\} 6\n/);
  assert.match(text, /^# HELP ebpf_studio_jvm_gc_pause_seconds GC pauses\n# TYPE ebpf_studio_jvm_gc_pause_seconds histogram\n/);
  assert.equal(escapeLabel('a"b\\c\nd'), 'a\\"b\\\\c\\nd');
  h.forget((l) => l.pid === '42');
  assert.equal(h.size, 0);

  // Kernel log2 counts (µs): slot i counts waits below 2^i µs; above the last bound only +Inf.
  const r = new Histograms(RUNQ_BUCKETS_S);
  const counts = new Array(RUNQ_BUCKETS_S.length).fill(0);
  counts[3] = 10;
  counts[10] = 1;
  r.add({ pidns: '4026531836' }, counts, 2, 0.5);
  const rt = new Exposition().histogram('ebpf_studio_runqueue_latency_seconds', 'run queue', r).text();
  assert.match(rt, /le="0\.000008"\} 10\n/);
  assert.match(rt, /le="0\.001024"\} 11\n/);
  assert.match(rt, /le="\+Inf"\} 13\n/);
  assert.match(rt, /_sum\{pidns="4026531836"\} 0\.5\n/);
  assert.ok(PAUSE_BUCKETS_S[0] <= 1e-5 && PAUSE_BUCKETS_S.at(-1)! >= 10, 'GC buckets cover 10 µs .. 10 s');
  assert.ok(RUNQ_BUCKETS_S.at(-1)! >= 10, 'run-queue buckets reach 10 s');

  const promtool = '/usr/bin/promtool';
  if (fs.existsSync(promtool)) {
    const chk = spawnSync(promtool, ['check', 'metrics'], { input: text + rt, encoding: 'utf8' });
    assert.equal(chk.status, 0, chk.stdout + chk.stderr);
    assert.equal((chk.stdout + chk.stderr).trim(), '');
  }
});

test('pull endpoints: each path reaches its profiler with its parameters; bad ones and refusals get 4xx with the fix', async () => {
  const calls: string[] = [];
  const ep: Endpoints = {
    metrics: () => '',
    profile: async (s) => (calls.push(`cpu ${s}`), Buffer.from('cpu')),
    offcpu: async (s, e) => (calls.push(`${e} ${s}`), Buffer.from(e)),
    allocs: async (s, pid) => {
      if (pid === 7) throw new RequestError(403, 'pid 7 (X) is not a JVM this agent covers');
      calls.push(`alloc ${s} ${pid}`);
      return Buffer.from('alloc');
    },
    maxProfileSeconds: 60,
    profileEnabled: true,
  };
  const server = await listen({ host: '127.0.0.1', port: 0 }, {}, ep, () => undefined);
  const get = async (u: string) => {
    const r = await fetch(`${server.url}${u}`);
    return `${r.status} ${await r.text()}`;
  };
  try {
    assert.equal(await get('/debug/pprof/offcpu?seconds=3'), '200 offcpu');
    assert.equal(await get('/debug/pprof/offcpu?seconds=3&event=wall'), '200 wall');
    assert.equal(await get('/debug/pprof/allocs?seconds=2&pid=42'), '200 alloc');
    assert.equal(await get('/debug/pprof/profile?seconds=1'), '200 cpu');
    assert.deepEqual(calls, ['offcpu 3', 'wall 3', 'alloc 2 42', 'cpu 1']);
    assert.match(await get('/debug/pprof/offcpu?seconds=3&event=idle'), /^400 bad event "idle".*event=wall/);
    assert.match(await get('/debug/pprof/allocs?seconds=2'), /^400 no pid:.*&pid=1234/);
    assert.match(await get('/debug/pprof/allocs?seconds=2&pid=-1'), /^400 bad pid "-1"/);
    assert.match(await get('/debug/pprof/allocs?seconds=2&pid=7'), /^403 pid 7 \(X\) is not a JVM this agent covers/);
    assert.match(await get('/debug/pprof/allocs?seconds=61&pid=42'), /^400 profile duration 61 s exceeds .*maxSeconds/);
    assert.match(await get('/debug/pprof/'), /allocs\?seconds=N&pid=P/);
    assert.equal(calls.length, 4, 'a refused request reached a profiler');
  } finally {
    await server.close();
  }
  const off = await listen({ host: '127.0.0.1', port: 0 }, {}, { ...ep, offcpu: undefined, allocs: undefined }, () => undefined);
  try {
    const r = await fetch(`${off.url}/debug/pprof/allocs?seconds=1&pid=42`);
    assert.equal(r.status, 404);
    assert.match(await r.text(), /"allocs": false/);
  } finally {
    await off.close();
  }
});

test('cgroup names: the cgroup2 mount from mountinfo, ids (inode numbers) mapped to paths below it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-cgroups-'));
  try {
    const mountinfo = path.join(dir, 'mountinfo');
    fs.writeFileSync(
      mountinfo,
      ['25 30 0:23 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs ro,mode=755', '26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu', '36 25 0:31 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw'].join('\n'),
    );
    assert.equal(cgroup2Mount(mountinfo), '/sys/fs/cgroup/unified');
    fs.writeFileSync(mountinfo, '40 39 0:31 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n');
    assert.equal(cgroup2Mount(mountinfo), undefined, 'a bind mount of a sub-cgroup is not the root');
    assert.equal(cgroup2Mount(path.join(dir, 'missing')), undefined);

    // A directory tree stands in for the cgroup2 file system: ids are the directories' inode numbers.
    const root = path.join(dir, 'cg');
    fs.mkdirSync(path.join(root, 'system.slice', 'foo.service'), { recursive: true });
    const id = (rel: string) => Number(fs.statSync(path.join(root, rel), { bigint: true }).ino & 0xffffffffn);
    const names = new CgroupNames(root, 1000);
    assert.equal(names.name(id('system.slice/foo.service'), 0), '/system.slice/foo.service');
    assert.equal(names.name(id('.'), 0), '/');
    fs.mkdirSync(path.join(root, 'later.slice'));
    assert.equal(names.name(id('later.slice'), 500), undefined, 'not walked again within rescanMs');
    assert.equal(names.name(id('later.slice'), 1500), '/later.slice');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// /proc/PID/cgroup of a JVM as each runtime leaves it (ids made up, layouts as the runtimes write them).
const ID_A = '3d5f0c9e8b7a61524f3e2d1c0b9a8f7e6d5c4b3a29181706f5e4d3c2b1a09f8e';
const ID_B = '9a8b7c6d5e4f30211f2e3d4c5b6a79880716253443526170ffeeddccbbaa9988';
const PROC_CGROUP = {
  // docker, systemd cgroup driver, unified cgroup v2
  docker: `0::/system.slice/docker-${ID_A}.scope\n`,
  // docker, cgroupfs driver, hybrid machine (v1 controllers beside the v2 line)
  dockerCgroupfs: `12:pids:/docker/${ID_A}\n11:memory:/docker/${ID_A}\n1:name=systemd:/docker/${ID_A}\n0::/docker/${ID_A}\n`,
  // rootless podman: the container's payload in a child cgroup of its scope
  podman: `0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-${ID_B}.scope/container\n`,
  // Kubernetes with containerd, systemd driver
  containerd: `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7f3e1a2b_4c5d_6e7f_8a9b_0c1d2e3f4a5b.slice/cri-containerd-${ID_B}.scope\n`,
  // Kubernetes with CRI-O, cgroupfs driver
  crio: `0::/kubepods/besteffort/pod7f3e1a2b-4c5d-6e7f-8a9b-0c1d2e3f4a5b/${ID_A}\n`,
  // a systemd service, and a systemd-nspawn machine: no container id in the path
  service: '0::/system.slice/orders.service\n',
  nspawn: '0::/machine.slice/systemd-nspawn@web.service/payload/system.slice/orders.service\n',
};

test('container selection: ids from docker, podman, containerd, CRI-O cgroup paths; path patterns; main classes and containers combine', () => {
  const cg = Object.fromEntries(Object.entries(PROC_CGROUP).map(([k, v]) => [k, parseProcCgroup(v)!])) as Record<keyof typeof PROC_CGROUP, string>;
  assert.equal(cg.dockerCgroupfs, `/docker/${ID_A}`);
  assert.equal(parseProcCgroup('1:name=systemd:/x\n'), undefined, 'a cgroup v1 only process has no v2 path');
  assert.deepEqual(containerIds(cg.docker), [ID_A]);
  assert.deepEqual(containerIds(cg.dockerCgroupfs), [ID_A]);
  assert.deepEqual(containerIds(cg.podman), [ID_B]);
  assert.deepEqual(containerIds(cg.containerd), [ID_B]);
  assert.deepEqual(containerIds(cg.crio), [ID_A]);
  assert.deepEqual(containerIds(cg.service), []);
  assert.deepEqual(containerIds(cg.nspawn), []);
  assert.equal(containerLabel(cg.containerd), ID_B.slice(0, 12));
  assert.equal(containerLabel(cg.service), undefined);

  // A short id (docker ps), a full id, a prefix of neither.
  const short = new JvmSelector(undefined, [ID_A.slice(0, 12)]);
  assert.deepEqual(Object.keys(cg).filter((k) => short.coversCgroup(cg[k as keyof typeof cg])), ['docker', 'dockerCgroupfs', 'crio']);
  const full = new JvmSelector(undefined, [ID_B]);
  assert.deepEqual(Object.keys(cg).filter((k) => full.coversCgroup(cg[k as keyof typeof cg])), ['podman', 'containerd']);
  assert.ok(!new JvmSelector(undefined, ['3d5f0c9e8b7b']).coversCgroup(cg.docker));
  // An id is a whole segment's id, not any hex run inside a path: the pod uid does not count.
  assert.ok(!new JvmSelector(undefined, ['7f3e1a2b4c5d']).coversCgroup(cg.containerd));

  // Path patterns: the cgroup itself or anything below it; * within a segment, ** across.
  const nspawn = new JvmSelector(undefined, ['/machine.slice/systemd-nspawn@web.service']);
  assert.ok(nspawn.coversCgroup(cg.nspawn));
  assert.ok(!nspawn.coversCgroup('/machine.slice/systemd-nspawn@web.service2/payload'), 'a sibling whose name merely starts the same');
  assert.ok(new JvmSelector(undefined, ['/system.slice/orders.service']).coversCgroup(cg.service));
  const docker = new JvmSelector(undefined, ['/system.slice/docker-*.scope']);
  assert.deepEqual(Object.keys(cg).filter((k) => docker.coversCgroup(cg[k as keyof typeof cg])), ['docker']);
  const burstable = new JvmSelector(undefined, ['/kubepods.slice/kubepods-burstable.slice']);
  assert.deepEqual(Object.keys(cg).filter((k) => burstable.coversCgroup(cg[k as keyof typeof cg])), ['containerd']);
  const anyPodman = new JvmSelector(undefined, ['/**/libpod-*.scope']);
  assert.deepEqual(Object.keys(cg).filter((k) => anyPodman.coversCgroup(cg[k as keyof typeof cg])), ['podman']);
  assert.ok(new JvmSelector(undefined, ['/']).coversCgroup(cg.service), '"/" is every cgroup');
  assert.ok(!new JvmSelector(undefined, ['/system.slice/orders.service']).coversCgroup(undefined), 'a process whose cgroup is unknown is in no container entry');

  // Nothing given: everything; both given: a JVM must match both.
  assert.ok(new JvmSelector().all && new JvmSelector().covers('Any', undefined));
  const both = new JvmSelector(['com.example.Orders'], [ID_A.slice(0, 12)]);
  assert.ok(!both.all);
  assert.ok(both.covers('com.example.Orders', cg.docker));
  assert.ok(!both.covers('com.example.Billing', cg.docker), 'right container, other main class');
  assert.ok(!both.covers('com.example.Orders', cg.podman), 'right main class, other container');
  assert.ok(new JvmSelector(['Orders']).covers('com.example.Orders', undefined), 'main classes alone do not look at cgroups');
});

test('config "histograms": a kit tracer by catalog name, its per mode and flags checked as the tracer checks them', () => {
  const c = parseConfig('{"histograms": {"biolatency": {"per": "disk", "queued": true}, "tcplat": {"rtt": true, "intervalSeconds": 2}}}', 'a.json');
  assert.deepEqual(c.histograms.biolatency, { enabled: true, options: { pid: 0, per: 'disk', unit: 'us', intervalS: 5, retain: false, queued: true }, maxSeries: 100 });
  assert.equal(c.histograms.tcplat!.options.intervalS, 2);
  assert.equal(c.histograms.cpudist, undefined, 'off unless named');
  assert.match(configError('{\n "histograms": {\n  "runqlat": {}\n }\n}'), /^agent\.json:3: histograms\.runqlat is not a known key: use one of biolatency, cpudist, tcplat/);
  assert.match(configError('{"histograms": {"biolatency": {"per": "thread"}}}'), /histograms\.biolatency\.per must be "none", "disk", "process", not "thread"/);
  assert.match(configError('{"histograms": {"cpudist": {"queued": true}}}'), /histograms\.cpudist\.queued is not a known key/);
  assert.match(configError('{"histograms": {"tcplat": {"rtt": true, "per": "process"}}}'), /histograms\.tcplat is not a valid combination: .*--rtt does not go with --pid or --per-process/);
});

test('a kit tracer exported: one family per flag set, keys named, series bounded by maxSeries', () => {
  const cfg = parseConfig('{"histograms": {"cpudist": {"per": "process", "offcpu": true, "maxSeries": 2}, "biolatency": {"per": "disk"}}}', 'a.json');
  const cpu = new KitExport('cpudist', cfg.histograms.cpudist!);
  const bio = new KitExport('biolatency', cfg.histograms.biolatency!);
  const key = (k: number, comm: string, count: number) => ({ key: k, comm, count, buckets: [{ low: 4, high: 7, count }] });
  const feed = (e: KitExport, keys: ReturnType<typeof key>[]) => (e as unknown as { add(u: HistUpdate): void }).add({ interval: { timestampNs: 1, buckets: [] }, keys, dropped: 0 });
  feed(cpu, [key(10, 'a', 1), key(11, 'b', 2), key(12, 'c', 3)]);
  feed(bio, [key((254 << 20) | 0, 'vda', 5)]);
  const x = new Exposition().histogram(cpu.metric, cpu.help, cpu.hist).histogram(bio.metric, bio.help, bio.hist).text();
  assert.equal(cpu.metric, 'ebpf_studio_cpudist_offcpu_seconds');
  assert.match(x, /^ebpf_studio_cpudist_offcpu_seconds_count\{pid="10",comm="a"\} 1$/m);
  assert.match(x, /^ebpf_studio_cpudist_offcpu_seconds_count\{pid="other"\} 3$/m);
  assert.match(x, /^ebpf_studio_biolatency_seconds_bucket\{disk="vda",le="0.000008"\} 5$/m);
  assert.match(x, /^ebpf_studio_biolatency_seconds_bucket\{disk="vda",le="0.000004"\} 0$/m);
  cpu.forgetIdle(Date.now() + 1000, 500);
  assert.equal(cpu.hist.size, 0);
  const check = fs.existsSync('/usr/bin/promtool') ? spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: x, encoding: 'utf8' }) : undefined;
  if (check) assert.equal(`${check.stdout}${check.stderr}`.trim(), '', 'promtool check metrics');
});

test('config "latency": entries with their defaults; a bad path, name, label, container or a second entry names its line', () => {
  const c = parseConfig('{"latency": [{"binary": "/usr/sbin/nginx", "function": "ngx_http_process_request"}, {"binary": "/app/server", "function": "Parser::parse", "labels": {"service": "orders"}, "containers": ["4f1c2e9a0b7d"], "intervalSeconds": 2}]}', 'a.json');
  assert.deepEqual(c.latency, [
    { binary: '/usr/sbin/nginx', function: 'ngx_http_process_request', labels: {}, intervalSeconds: 10 },
    { binary: '/app/server', function: 'Parser::parse', labels: { service: 'orders' }, containers: ['4f1c2e9a0b7d'], intervalSeconds: 2 },
  ]);
  assert.deepEqual(parseConfig('{}', 'a.json').latency, [], 'none unless named');
  const two = (second: string) => `{\n "latency": [\n  {"binary": "/bin/a", "function": "f", "labels": {"x": "{[,]}"}},\n  ${second}\n ]\n}`;
  assert.match(configError(two('{"binary": "bin/b", "function": "f"}')), /^agent\.json:4: latency\.1\.binary must be the absolute path of the program or library/);
  assert.match(configError(two('{"binary": "/bin/b", "function": " "}')), /^agent\.json:4: latency\.1\.function must name a function \(as nm -C shows it\) or FILE:LINE/);
  assert.match(configError(two('{"binary": "/bin/b", "function": "f", "labels": {"le": "1"}}')), /^agent\.json:4: latency\.1\.labels has the label name "le": a Prometheus label name .* other than function, binary, le, container/);
  assert.match(configError(two('{"binary": "/bin/b", "function": "f", "labels": {"bad-name": "1"}}')), /label name "bad-name"/);
  assert.match(configError(two('{"binary": "/bin/b", "function": "f", "labels": {"n": 1}}')), /latency\.1\.labels has "n": its value must be a string/);
  assert.match(configError(two('{"binary": "/bin/b", "function": "f", "containers": ["web"]}')), /^agent\.json:4: latency\.1\.containers must be a non-empty list of container ids/);
  assert.match(configError(two('{"binary": "/bin/a", "function": "f"}')), /^agent\.json:4: latency\.1 names f in \/bin\/a a second time/);
  assert.match(configError(two('{"binary": "/bin/b", "function": "f", "pid": 1}')), /^agent\.json:4: latency\.1\.pid is not a known key: use one of binary, function, labels, containers, intervalSeconds/);
  assert.match(configError(two('{"binary": "/bin/b", "function": "f", "intervalSeconds": 0}')), /latency\.1\.intervalSeconds must be a whole number from 1 to 300, not 0/);
  assert.match(configError('{"latency": {"binary": "/bin/a"}}'), /latency must be a list of at most 64 entries/);
  assert.match(configError('{"latency": ["/bin/a"]}'), /latency\.0 must be a JSON object/);
});

test('a function\'s latency exported: per container from its cgroup, others in one series, a new cgroup named before it counts, containers filter', () => {
  const id = 'ab'.repeat(32);
  const paths = new Map<number, string>([
    [1, `/system.slice/docker-${id}.scope`],
    [2, '/user.slice/user-0.slice/session-1.scope'],
    [3, '/system.slice/cron.service'],
  ]);
  const cgroups = { name: (n: number) => paths.get(n) } as unknown as CgroupNames;
  // No runtime files to read: a container is named by its id.
  const containers = new ContainerLookup(['/nonexistent-root']);
  const hist = new Histograms(RUNQ_BUCKETS_S);
  const cfg = parseConfig(`{"latency": [{"binary": "/app/srv", "function": "handle", "labels": {"service": "web"}}, {"binary": "/app/srv", "function": "parse", "containers": ["${id.slice(0, 12)}"]}]}`, 'a.json');
  const all = new LatencyExport(cfg.latency[0], hist, cgroups, containers);
  const only = new LatencyExport(cfg.latency[1], hist, cgroups, containers);
  const slots = (i: number, n: number) => Object.assign(new Array(32).fill(0), { [i]: n });
  const feed = (e: LatencyExport, entries: { key: number; slots: number[] }[]) => (e as unknown as { add(x: unknown[]): void }).add(entries.map((x) => ({ ...x, epoch: 0, comm: '' })));
  feed(all, [{ key: 1, slots: slots(11, 7) }, { key: 2, slots: slots(3, 2) }, { key: 3, slots: slots(3, 1) }, { key: 9, slots: slots(5, 4) }]);
  feed(only, [{ key: 1, slots: slots(11, 3) }, { key: 2, slots: slots(11, 5) }]);
  let x = new Exposition().histogram(FUNCTION_LATENCY_METRIC, FUNCTION_LATENCY_HELP, hist).text();
  const short = id.slice(0, 12);
  assert.match(x, new RegExp(`^ebpf_studio_function_latency_seconds_count\\{function="handle",binary="/app/srv",service="web",container="${short}",container_id="${short}"\\} 7$`, 'm'));
  assert.match(x, /^ebpf_studio_function_latency_seconds_count\{function="handle",binary="\/app\/srv",service="web"\} 3$/m, 'outside containers: one series');
  assert.match(x, new RegExp(`^ebpf_studio_function_latency_seconds_bucket\\{function="parse",binary="/app/srv",container="${short}",container_id="${short}",le="0.001024"\\} 0$`, 'm'));
  assert.match(x, new RegExp(`^ebpf_studio_function_latency_seconds_bucket\\{function="parse",binary="/app/srv",container="${short}",container_id="${short}",le="0.002048"\\} 3$`, 'm'));
  assert.doesNotMatch(x, /function="parse",binary="\/app\/srv"\}/, 'outside the configured container: not exported');
  // cgroup 9 was not named yet: its 4 calls wait one read, and are counted under its container once named.
  paths.set(9, `/system.slice/docker-${id}.scope/sub`);
  feed(all, []);
  x = new Exposition().histogram(FUNCTION_LATENCY_METRIC, FUNCTION_LATENCY_HELP, hist).text();
  assert.match(x, new RegExp(`^ebpf_studio_function_latency_seconds_count\\{function="handle",binary="/app/srv",service="web",container="${short}",container_id="${short}"\\} 11$`, 'm'));
  // a cgroup gone before it was named: counted without container labels at the next read
  feed(all, [{ key: 77, slots: slots(2, 1) }]);
  feed(all, []);
  x = new Exposition().histogram(FUNCTION_LATENCY_METRIC, FUNCTION_LATENCY_HELP, hist).text();
  assert.match(x, /^ebpf_studio_function_latency_seconds_count\{function="handle",binary="\/app\/srv",service="web"\} 4$/m);
  const check = fs.existsSync('/usr/bin/promtool') ? spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: x, encoding: 'utf8' }) : undefined;
  if (check) assert.equal(`${check.stdout}${check.stderr}`.trim(), '', 'promtool check metrics');
  all.forgetIdle(Date.now() + 1000, 500);
  only.forgetIdle(Date.now() + 1000, 500);
  assert.equal(hist.size, 0);
});
