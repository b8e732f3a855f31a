// The fleet agent where fleets run it: `ebpf-studio agent` in its own image (built from Debian's
// packages by scripts/build-agent-image.sh) in a privileged podman container sharing the host's
// pid namespace, with the runtime's state mounted read-only, as deploy/kubernetes/ runs it. Debian's
// Prometheus on the host scrapes it. Two JVMs start later in OTHER containers (the test image's
// own OpenJDK: other inodes than the host's libjvm.so); the pauses Prometheus stores for each equal
// the JVM's -Xlog:gc per collector, and each JVM's series carry `container` and `image` naming its
// container as podman does, and `container_id`. The agent stops with exit 0 on `podman stop`.
// Then the agent with deploy/kubernetes's own config (listen beyond loopback, TLS, bearer token)
// from Secret-shaped mounts (files behind ..data symlinks, 0400) and a read-only root, scraped by
// Prometheus over https checking the certificate against the Service's name, as the ServiceMonitor
// asks. Under docker (docker.io from Debian; a dockerd without bridge or iptables rules is started
// when none runs, and stopped): the agent in a docker container labels a JVM in another docker
// container with docker's name and image, its pauses equal to its -Xlog:gc.
//
// The image is built once and cached in podman's store; the repository's dist/ is mounted over
// the image's copy so the current build is what runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, runCli, sleep, waitFor } from '../helpers';
import { IMAGE, ULIMITS, containerBed, containerIdOf, containerPrep, dockerDaemon, dockerImage, podman } from './containerKit';
import { freePort, prometheus, promVector, startPrometheus, type PromSample } from './promKit';

const AGENT_IMAGE = 'localhost/ebpf-studio-agent-test:1';
const prep = containerPrep();
const skip = prep.skip ?? (prometheus ? undefined : "Debian's prometheus package is not installed (scripts/install-deps.sh --test)");

/** The agent's image, built by the script the docs name when podman's store lacks it. */
function agentImage(): { skip?: string; note: string } {
  if (podman(['image', 'exists', AGENT_IMAGE]).status === 0) return { note: `${AGENT_IMAGE} cached` };
  const r = spawnSync(path.join(repoRoot, 'scripts', 'build-agent-image.sh'), ['--tag', AGENT_IMAGE], { encoding: 'utf8', timeout: 15 * 60_000 });
  if (r.status !== 0) return { skip: `scripts/build-agent-image.sh failed (${r.status}): ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ')}`, note: '' };
  return { note: r.stdout.trim().split('\n').pop()! };
}

/** The read-only mounts a DaemonSet gives the agent: tracefs, podman's, docker's and runc's state. */
function daemonSetMounts(): string[] {
  const ro = ['/run/runc', '/var/lib/containers/storage/overlay-containers', '/var/lib/docker/containers'].filter((d) => fs.existsSync(d));
  return [
    ...(fs.existsSync('/sys/kernel/tracing/events') ? ['-v', '/sys/kernel/tracing:/sys/kernel/tracing'] : []),
    ...ro.flatMap((d) => ['-v', `${d}:${d}:ro`]),
  ];
}

/** A directory laid out as the kubelet mounts a Secret: files behind ..data symlinks, mode 0400. */
function secretVolume(dir: string, files: Record<string, string | Buffer>): string {
  const data = path.join(dir, '..2026_11_27_00_00_00.000000001');
  fs.mkdirSync(data, { recursive: true });
  fs.symlinkSync(path.basename(data), path.join(dir, '..data'));
  for (const [name, content] of Object.entries(files)) {
    fs.writeFileSync(path.join(data, name), content, { mode: 0o400 });
    fs.symlinkSync(`..data/${name}`, path.join(dir, name));
  }
  return dir;
}

/** The agent's config as deploy/kubernetes/configmap.yaml ships it (the block under "agent.json: |"). */
function shippedConfig(): Record<string, unknown> {
  const text = fs.readFileSync(path.join(repoRoot, 'deploy', 'kubernetes', 'configmap.yaml'), 'utf8');
  const m = /^ {2}agent\.json: \|\n((?: {4}.*\n?)+)/m.exec(text);
  assert.ok(m, 'configmap.yaml has no agent.json block');
  return JSON.parse(m[1].replace(/^ {4}/gm, '')) as Record<string, unknown>;
}

/** A CA, and a certificate for `name` it signed (openssl), or why not. */
function makeCerts(dir: string, name: string): string | undefined {
  const sh = (args: string[]) => spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  fs.writeFileSync(path.join(dir, 'ext'), `subjectAltName=DNS:${name}\n`);
  for (const args of [
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=test-ca', '-keyout', 'ca.key', '-out', 'ca.crt'],
    ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', 'tls.key', '-out', 'tls.csr'],
    ['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'ext', '-out', 'tls.crt'],
  ]) {
    const r = sh(args);
    if (r.error || r.status !== 0) return `openssl ${args[0]} failed: ${r.error?.message ?? r.stderr}`;
  }
  return undefined;
}

/** Capability names by bit (linux/capability.h), as docker's --cap-drop takes them. */
const CAPS = ['CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP', 'LINUX_IMMUTABLE', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER', 'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP', 'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ'];

/**
 * --privileged, or for docker where this machine's bounding set lacks capabilities (docker's
 * --privileged asks runc for all of them and fails; podman's grants those there are) the same
 * without the missing ones: every capability there is, no seccomp, AppArmor or masked /proc paths.
 */
function privileged(engine: 'podman' | 'docker'): string[] {
  const bnd = /^CapBnd:\s*([0-9a-f]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  const missing = bnd ? CAPS.filter((_, bit) => !(BigInt(`0x${bnd[1]}`) & (1n << BigInt(bit)))) : [];
  if (engine === 'podman' || missing.length === 0) return ['--privileged'];
  return ['--cap-add', 'ALL', ...missing.flatMap((c) => ['--cap-drop', c]), '--security-opt', 'seccomp=unconfined', '--security-opt', 'apparmor=unconfined', '--security-opt', 'systempaths=unconfined'];
}

/** The agent in its container, the DaemonSet's way (privileged, host pid namespace, mounts), once it serves. */
async function startAgent(engine: 'podman' | 'docker', container: string, mounts: string[], args: string[], children: ChildProcess[]) {
  const child = spawn(
    engine,
    [...(engine === 'podman' ? ['--runtime', 'runc'] : []), 'run', '--rm', '--name', container, ...ULIMITS, ...privileged(engine), '--pid=host', '--network=host', ...daemonSetMounts(),
      '-v', `${path.join(repoRoot, 'dist')}:/opt/ebpf-studio/dist:ro`, ...mounts, AGENT_IMAGE, ...args, '--verbose'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let log = '';
  child.stdout!.on('data', (d) => (log += d));
  child.stderr!.on('data', (d) => (log += d));
  const exit = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  assert.ok(await waitFor(() => /serving https?:\/\//.test(log) || child.exitCode !== null, 90_000), `the agent did not start in its container:\n${log}`);
  assert.ok(await waitFor(() => log.includes('looking for new JVMs'), 30_000), `java-gc does not follow new JVMs:\n${log}`);
  return { child, exit, log: () => log };
}

describe('ebpf-studio agent in a privileged container', { skip }, () => {
  const { jvm } = containerBed({ fixtures: ['java/GcWorkload.java'], build: 'javac -d /app /app/GcWorkload.java' });
  const name = `ebpf-studio-agentctr-${process.pid}`;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-agentctr-'));
  const children: ChildProcess[] = [];
  let image: { skip?: string; note: string } = { note: '' };

  before(() => {
    image = agentImage();
  });
  after(() => {
    for (const n of [name, `${name}-k8s`]) podman(['rm', '-f', '-t', '0', n], 30_000);
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('Prometheus stores the pauses of JVMs in two other containers as their -Xlog:gc counts, labelled with their containers', { timeout: 300_000 }, async (t) => {
    if (image.skip) return t.skip(image.skip);
    t.diagnostic(`${prep.note}; ${image.note}`);
    const tokenFile = path.join(work, 'agent.token');
    const made = runCli(['agent', '--make-token', '--token-file', tokenFile]);
    assert.equal(made.code, 0, made.stderr);

    // The DaemonSet's shape: privileged, the host's pid namespace (hostNetwork here, so the agent
    // stays on loopback with its token), the token as a read-only file.
    const port = await freePort();
    const agent = await startAgent('podman', name, ['-v', `${tokenFile}:/etc/ebpf-studio/agent.token:ro`], ['--listen', `127.0.0.1:${port}`], children);
    const agentExit = agent.exit;
    const log = () => agent.log();
    const prom = await startPrometheus(work, `127.0.0.1:${port}`, tokenFile);
    children.push(prom.child);

    // Two JVMs in their own containers, started after the agent: found by their exec, their
    // libjvm.so (the image's, not the host's) attached before they collect.
    const jvms = [await jvm(3, 192, 4000), await jvm(2, 128, 4000)];
    const ids = jvms.map((j) => containerIdOf(j.name));
    for (const j of jvms) assert.ok(await waitFor(() => log().includes(`pid ${j.hostPid}:`) || new RegExp(`as pid ${j.hostPid} maps it`).test(log()), 20_000), `the agent did not find pid ${j.hostPid}:\n${log()}`);
    for (const j of jvms) j.send('go');
    const own = await Promise.all(jvms.map((j) => j.done));

    // Prometheus has scraped after the JVMs' last GCs (the tracer hands events over every 500 ms).
    type Seen = { Copy: number; MarkSweepCompact: number; labels: Record<string, string>[] };
    const seenOf = async (pid: number): Promise<Seen> => {
      const v = await promVector(prom.base, `ebpf_studio_jvm_gc_pause_seconds_count{pid="${pid}"}`).catch(() => []);
      const by = (c: string) => v.filter((s) => s.metric.collector === c).reduce((a, s) => a + s.value, 0);
      return { Copy: by('Copy'), MarkSweepCompact: by('MarkSweepCompact'), labels: v.map((s) => s.metric) };
    };
    let seen: Seen[] = [];
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      seen = await Promise.all(jvms.map((j) => seenOf(j.hostPid)));
      if (seen.every((s, i) => s.Copy === own[i].logYoung && s.MarkSweepCompact === own[i].logFull)) break;
      await sleep(1000);
    }
    for (const [i, j] of jvms.entries()) {
      const id = ids[i];
      t.diagnostic(`${j.name} (pid ${j.hostPid}): Prometheus young ${seen[i].Copy} full ${seen[i].MarkSweepCompact}; -Xlog:gc young ${own[i].logYoung} full ${own[i].logFull}; beans young ${own[i].young} full ${own[i].full}; labels ${JSON.stringify(seen[i].labels[0] ?? {})}`);
      assert.ok(own[i].logYoung > 10 && own[i].logFull >= 2, `the workload in ${j.name} collects`);
      assert.equal(seen[i].Copy, own[i].logYoung, `young pauses of ${j.name}: Prometheus and -Xlog:gc\n${log().slice(-2000)}`);
      assert.equal(seen[i].MarkSweepCompact, own[i].logFull, `full pauses of ${j.name}: Prometheus and -Xlog:gc`);
      for (const l of seen[i].labels) {
        assert.equal(l.container, j.name, `the series of pid ${j.hostPid} name another container: ${JSON.stringify(l)}`);
        assert.equal(l.image, IMAGE, `the series of pid ${j.hostPid} name another image: ${JSON.stringify(l)}`);
        assert.equal(l.container_id, id.slice(0, 12));
      }
    }

    // podman stop sends SIGTERM: the agent detaches and exits 0.
    const stop = podman(['stop', '-t', '30', name], 60_000);
    assert.equal(stop.status, 0, stop.stderr);
    assert.equal(await agentExit, 0, `the agent in its container exited otherwise:\n${log().slice(-2000)}`);
    prom.child.kill('SIGTERM');
  });
  test("deploy/kubernetes's own config: TLS and token from Secret-shaped mounts, read-only root; Prometheus scrapes over https", { timeout: 300_000 }, async (t) => {
    if (image.skip) return t.skip(image.skip);
    const k8s = fs.mkdtempSync(path.join(work, 'k8s-'));
    fs.chmodSync(k8s, 0o755);
    // The name the ServiceMonitor's tlsConfig.serverName checks the certificate against.
    const serverName = 'ebpf-studio-agent.ebpf-studio.svc';
    const why = makeCerts(k8s, serverName);
    if (why) return t.skip(why);
    const token = crypto.randomBytes(32).toString('hex');
    const tokenDir = secretVolume(path.join(k8s, 'token'), { token });
    const tlsDir = secretVolume(path.join(k8s, 'tls'), { 'tls.crt': fs.readFileSync(path.join(k8s, 'tls.crt')), 'tls.key': fs.readFileSync(path.join(k8s, 'tls.key')) });
    const port = await freePort();
    const config = { ...shippedConfig(), listen: `0.0.0.0:${port}` };
    const configFile = path.join(k8s, 'agent.json');
    fs.writeFileSync(configFile, JSON.stringify(config), { mode: 0o644 });
    const agent = await startAgent(
      'podman',
      `${name}-k8s`,
      ['--read-only', '--tmpfs', '/tmp', '-v', `${configFile}:/etc/ebpf-studio/agent.json:ro`, '-v', `${tokenDir}:/etc/ebpf-studio/token:ro`, '-v', `${tlsDir}:/etc/ebpf-studio/tls:ro`],
      ['--config', '/etc/ebpf-studio/agent.json'],
      children,
    );
    assert.match(agent.log(), /serving https:\/\/0\.0\.0\.0:\d+\/metrics .*bearer token required/);
    const tokenFile = path.join(k8s, 'scraper.token');
    fs.writeFileSync(tokenFile, token, { mode: 0o600 });
    // The target labels the Prometheus Operator adds for the agent's pod, and the ServiceMonitor's
    // relabelings (the pod's name as agent_pod, the rest dropped): no JVM is given the agent's pod.
    const agentPod = { container: 'agent', pod: 'ebpf-studio-agent-x7k2p', namespace: 'ebpf-studio' };
    const relabel = [{ source_labels: ['pod'], target_label: 'agent_pod' }, { action: 'labeldrop', regex: '(container|pod|namespace)' }];
    const prom = await startPrometheus(k8s, `127.0.0.1:${port}`, tokenFile, { caFile: path.join(k8s, 'ca.crt'), serverName }, agentPod, relabel);
    children.push(prom.child);

    const j = await jvm(1, 96, 4000);
    assert.ok(await waitFor(() => agent.log().includes(`pid ${j.hostPid}:`) || new RegExp(`as pid ${j.hostPid} maps it`).test(agent.log()), 20_000), `the agent did not find pid ${j.hostPid}:\n${agent.log()}`);
    j.send('go');
    const own = await j.done;
    let seen: PromSample[] = [];
    let up: PromSample[] = [];
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      up = await promVector(prom.base, 'up{job="ebpf-studio"}').catch(() => []);
      seen = await promVector(prom.base, `ebpf_studio_jvm_gc_pause_seconds_count{pid="${j.hostPid}"}`).catch(() => []);
      if (seen.reduce((a, x) => a + x.value, 0) === own.logYoung + own.logFull) break;
      await sleep(1000);
    }
    t.diagnostic(`over https: up ${up[0]?.value}; pauses ${seen.reduce((a, x) => a + x.value, 0)}, -Xlog:gc ${own.logYoung + own.logFull}; labels ${JSON.stringify(seen[0]?.metric ?? {})}`);
    assert.equal(up[0]?.value, 1, `Prometheus cannot scrape the agent over https:\n${prom.log().slice(-1500)}`);
    assert.equal(seen.reduce((a, x) => a + x.value, 0), own.logYoung + own.logFull, 'pauses: Prometheus and -Xlog:gc');
    const labelsOk = (m: Record<string, string>) => m.container === j.name && m.image === IMAGE && m.pod === undefined && m.namespace === undefined && m.agent_pod === agentPod.pod && !Object.keys(m).some((k) => k.startsWith('exported_'));
    assert.ok(seen.every((x) => labelsOk(x.metric)), `labels: ${JSON.stringify(seen.map((x) => x.metric))}`);
    // Without the token: 401, as for any scraper that lacks the Secret.
    const denied = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', path.join(k8s, 'ca.crt'), '--resolve', `${serverName}:${port}:127.0.0.1`, `https://${serverName}:${port}/metrics`], { encoding: 'utf8' });
    if (denied.status === 0) assert.equal(denied.stdout, '401');
    assert.equal(podman(['stop', '-t', '30', `${name}-k8s`], 60_000).status, 0);
    assert.equal(await agent.exit, 0, agent.log().slice(-2000));
    prom.child.kill('SIGTERM');
  });
});

describe('ebpf-studio agent in a privileged docker container', { skip }, () => {
  const bed = containerBed({ engine: 'docker', fixtures: ['java/GcWorkload.java'] });
  const name = `ebpf-studio-agentdkr-${process.pid}`;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-agentdkr-'));
  const children: ChildProcess[] = [];
  let why: string | undefined;
  let daemon: { started: boolean; stop(): void } | undefined;
  let note = '';

  before(async () => {
    const d = await dockerDaemon();
    if (typeof d === 'string') return void (why = d);
    daemon = d;
    const agent = agentImage();
    const t0 = Date.now();
    why = agent.skip ?? dockerImage(IMAGE) ?? dockerImage(AGENT_IMAGE);
    note = `dockerd ${d.started ? 'started by the test' : 'running'}; images in docker's store after ${((Date.now() - t0) / 1000).toFixed(0)} s`;
    if (why) return;
    const r = spawnSync('docker', ['run', '--rm', '--network', 'none', ...ULIMITS, '-v', `${bed.work}:/app`, IMAGE, 'javac', '-d', '/app', '/app/GcWorkload.java'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `javac in a docker container failed: ${r.stderr}`);
  });
  after(() => {
    spawnSync('docker', ['rm', '-f', name], { timeout: 30_000 });
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  });
  // Registered after the bed's: its containers are removed before a dockerd started here stops.
  after(() => daemon?.stop());

  test('docker: Prometheus stores the pauses of a JVM in another docker container as its -Xlog:gc counts, with docker\'s name and image', { timeout: 300_000 }, async (t) => {
    if (why) return t.skip(why);
    t.diagnostic(note);
    const tokenFile = path.join(work, 'agent.token');
    const made = runCli(['agent', '--make-token', '--token-file', tokenFile]);
    assert.equal(made.code, 0, made.stderr);
    const port = await freePort();
    const agent = await startAgent('docker', name, ['-v', `${tokenFile}:/etc/ebpf-studio/agent.token:ro`], ['--listen', `127.0.0.1:${port}`], children);
    const prom = await startPrometheus(work, `127.0.0.1:${port}`, tokenFile);
    children.push(prom.child);

    const j = await bed.jvm(2, 128, 4000);
    const id = spawnSync('docker', ['inspect', '-f', '{{.Id}}', j.name], { encoding: 'utf8' }).stdout.trim();
    assert.ok(await waitFor(() => agent.log().includes(`pid ${j.hostPid}:`) || new RegExp(`as pid ${j.hostPid} maps it`).test(agent.log()), 20_000), `the agent did not find pid ${j.hostPid}:\n${agent.log()}`);
    j.send('go');
    const own = await j.done;
    let seen: PromSample[] = [];
    const total = () => seen.reduce((a, x) => a + x.value, 0);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      seen = await promVector(prom.base, `ebpf_studio_jvm_gc_pause_seconds_count{pid="${j.hostPid}"}`).catch(() => []);
      if (total() === own.logYoung + own.logFull) break;
      await sleep(1000);
    }
    const by = (c: string) => seen.filter((x) => x.metric.collector === c).reduce((a, x) => a + x.value, 0);
    t.diagnostic(`${j.name} (pid ${j.hostPid}): Prometheus young ${by('Copy')} full ${by('MarkSweepCompact')}; -Xlog:gc young ${own.logYoung} full ${own.logFull}; labels ${JSON.stringify(seen[0]?.metric ?? {})}`);
    assert.ok(own.logYoung > 10 && own.logFull >= 2, 'the workload collects');
    assert.equal(by('Copy'), own.logYoung, `young pauses: Prometheus and -Xlog:gc\n${agent.log().slice(-2000)}`);
    assert.equal(by('MarkSweepCompact'), own.logFull, 'full pauses: Prometheus and -Xlog:gc');
    for (const x of seen) {
      assert.equal(x.metric.container, j.name, JSON.stringify(x.metric));
      assert.equal(x.metric.image, IMAGE, JSON.stringify(x.metric));
      assert.equal(x.metric.container_id, id.slice(0, 12));
    }
    assert.equal(spawnSync('docker', ['stop', '-t', '30', name], { encoding: 'utf8', timeout: 60_000 }).status, 0);
    assert.equal(await agent.exit, 0, agent.log().slice(-2000));
    prom.child.kill('SIGTERM');
  });
});
