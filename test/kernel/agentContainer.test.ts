// The fleet agent where fleets run it: `ebpf-studio agent` in its own image (built from Debian's
// packages by scripts/build-agent-image.sh) in a privileged podman container sharing the host's
// pid namespace, with the runtime's state mounted read-only, as deploy/kubernetes/ runs it. Debian's
// Prometheus on the host scrapes it. Two JVMs start later in OTHER containers (the test image's
// own OpenJDK: other inodes than the host's libjvm.so); the pauses Prometheus stores for each equal
// the JVM's -Xlog:gc per collector, and each JVM's series carry `container` and `image` naming its
// container as podman does, and `container_id`. The agent stops with exit 0 on `podman stop`.
//
// The image is built once and cached in podman's store; the repository's dist/ is mounted over
// the image's copy so the current build is what runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, runCli, sleep, waitFor } from '../helpers';
import { IMAGE, ULIMITS, containerBed, containerIdOf, containerPrep, podman } from './containerKit';
import { freePort, prometheus, promVector, startPrometheus } from './promKit';

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

/** The read-only mounts a DaemonSet gives the agent: tracefs, podman's and runc's state. */
function daemonSetMounts(): string[] {
  const ro = ['/run/runc', '/var/lib/containers/storage/overlay-containers'].filter((d) => fs.existsSync(d));
  return [
    ...(fs.existsSync('/sys/kernel/tracing/events') ? ['-v', '/sys/kernel/tracing:/sys/kernel/tracing'] : []),
    ...ro.flatMap((d) => ['-v', `${d}:${d}:ro`]),
  ];
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
    podman(['rm', '-f', '-t', '0', name], 30_000);
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
    const agent = spawn(
      'podman',
      ['--runtime', 'runc', 'run', '--rm', '--name', name, ...ULIMITS, '--privileged', '--pid=host', '--network=host', ...daemonSetMounts(),
        '-v', `${path.join(repoRoot, 'dist')}:/opt/ebpf-studio/dist:ro`, '-v', `${tokenFile}:/etc/ebpf-studio/agent.token:ro`,
        AGENT_IMAGE, '--listen', `127.0.0.1:${port}`, '--verbose'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(agent);
    let log = '';
    agent.stdout!.on('data', (d) => (log += d));
    agent.stderr!.on('data', (d) => (log += d));
    const agentExit = new Promise<number | null>((r) => agent.on('exit', (c) => r(c)));
    assert.ok(await waitFor(() => log.includes('serving http://') || agent.exitCode !== null, 90_000), `the agent did not start in its container:\n${log}`);
    assert.ok(await waitFor(() => log.includes('looking for new JVMs'), 30_000), `java-gc does not follow new JVMs:\n${log}`);
    const prom = await startPrometheus(work, `127.0.0.1:${port}`, tokenFile);
    children.push(prom.child);

    // Two JVMs in their own containers, started after the agent: found by their exec, their
    // libjvm.so (the image's, not the host's) attached before they collect.
    const jvms = [await jvm(3, 192, 4000), await jvm(2, 128, 4000)];
    for (const j of jvms) assert.ok(await waitFor(() => log.includes(`pid ${j.hostPid}:`) || new RegExp(`as pid ${j.hostPid} maps it`).test(log), 20_000), `the agent did not find pid ${j.hostPid}:\n${log}`);
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
      const id = containerIdOf(j.name);
      t.diagnostic(`${j.name} (pid ${j.hostPid}): Prometheus young ${seen[i].Copy} full ${seen[i].MarkSweepCompact}; -Xlog:gc young ${own[i].logYoung} full ${own[i].logFull}; beans young ${own[i].young} full ${own[i].full}; labels ${JSON.stringify(seen[i].labels[0] ?? {})}`);
      assert.ok(own[i].logYoung > 10 && own[i].logFull >= 2, `the workload in ${j.name} collects`);
      assert.equal(seen[i].Copy, own[i].logYoung, `young pauses of ${j.name}: Prometheus and -Xlog:gc\n${log.slice(-2000)}`);
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
    assert.equal(await agentExit, 0, `the agent in its container exited with ${agent.exitCode}:\n${log.slice(-2000)}`);
    prom.child.kill('SIGTERM');
  });
});
