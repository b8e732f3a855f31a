// The editor's extension host in a Dev Container: our CLI run inside a real podman container, the
// three ways people start one. Default (unprivileged) must say the container refuses BPF and how
// to start it; --privileged --pid=host must trace a host JVM with the JVM's own counts; privileged
// in its own pid namespace must refuse --pid with the reason (BPF sees host pids there).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import type { ProfileResult } from '../../extension/protocol/profile';
import { waitFor } from '../helpers';
import { containerPrep, NODE_IMAGE, podman, shellInNodeContainer } from './containerKit';
import { GcWorkloads, noJdkReason } from './gcWorkload';

const prep = containerPrep();
const skip = prep.skip ?? (podman(['image', 'exists', NODE_IMAGE]).status !== 0 ? `${NODE_IMAGE} is missing: build it with scripts/build-agent-image.sh --tag ${NODE_IMAGE}` : undefined);
const RECIPE = /"runArgs": \["--privileged", "--pid=host"\]/;

describe('the CLI inside a Dev Container', { skip }, () => {
  const started: ReturnType<typeof shellInNodeContainer>[] = [];
  const run = (runArgs: string[], script: string) => {
    const c = shellInNodeContainer(runArgs, script);
    started.push(c);
    return c;
  };
  after(() => {
    for (const c of started) c.stop();
  });

  test('unprivileged: doctor and a trace say the container refuses BPF, and how to start it; non-zero exit', { timeout: 120_000 }, async () => {
    const r = await run([], 'node $CLI doctor; echo "doctor=$?"; node $CLI profile --all --duration 1').done;
    assert.match(r.stdout, /container +inside podman: unprivileged \(BPF refused\), own pid namespace/);
    assert.match(r.stdout, /inside a podman container without privileges: the container refuses BPF even to root/);
    assert.match(r.stdout, /doctor=0/);
    assert.notEqual(r.code, 0, `profile exited 0 in an unprivileged container: ${r.stderr}`);
    assert.match(r.stderr, /Operation not permitted.*inside a podman container without privileges/i);
    assert.match(r.stderr, RECIPE);
    assert.doesNotMatch(r.stderr, /run with sudo|\n\s+at /, 'sudo cannot help in a container; no stack trace');
  });

  test('privileged, own pid namespace: --pid is refused with the reason, doctor says what is limited', { timeout: 120_000 }, async () => {
    const r = await run(['--privileged'], 'node $CLI doctor | grep -E "^container|own pid namespace"; sleep 30 & node $CLI profile --pid $! --duration 1').done;
    assert.match(r.stdout, /container +inside podman: privileged, own pid namespace/);
    assert.notEqual(r.code, 0, `profile --pid exited 0 in its own pid namespace: ${r.stderr}`);
    assert.match(r.stderr, /pid \d+ is numbered in this podman container's own pid namespace, but BPF sees the host's pids/);
    assert.match(r.stderr, RECIPE);
  });

  describe('--privileged --pid=host: a host JVM traced from the container', { skip: noJdkReason }, () => {
    let workloads: GcWorkloads;
    before(() => {
      workloads = new GcWorkloads();
    });
    after(() => workloads?.dispose());

    test('doctor sees the host pid namespace; java-gc --pid counts what the JVM counts', { timeout: 180_000 }, async (t) => {
      const d = await run(['--privileged', '--pid=host'], 'node $CLI doctor').done;
      assert.match(d.stdout, /container +inside podman: privileged, host's pid namespace/);
      assert.doesNotMatch(d.stdout, /inside a podman container (without|with its own)/);
      const jvm = await workloads.start(3, 256);
      const cli = run(['--privileged', '--pid=host'], `exec node $CLI java-gc --pid ${jvm.pid} --json --verbose`);
      assert.ok(await waitFor(() => /attached to .*libjvm\.so/.test(cli.stderr()), 60_000), `not attached: ${cli.stderr()}`);
      jvm.go();
      const counts = await jvm.done;
      const r = await cli.done;
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as JavaGcResult;
      assert.equal(result.lost, 0);
      assert.ok(counts.young > 0 && counts.full === 3, `workload: ${JSON.stringify(counts)}`);
      assert.equal(result.events.length, counts.young + counts.full, `seen ${result.events.length}, the JVM counted ${JSON.stringify(counts)}`);
      t.diagnostic(`java-gc in the container saw ${result.events.length} pauses; the JVM counted ${counts.young} young + ${counts.full} full`);
    });

    test('profile --pid of a host process: samples match its CPU time (the CLI checks, exit 0)', { timeout: 120_000 }, async (t) => {
      const burner = spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' });
      try {
        const r = await run(['--privileged', '--pid=host'], `exec node $CLI profile --pid ${burner.pid} --duration 2 --no-java --json`).done;
        assert.equal(r.code, 0, r.stderr);
        const result = JSON.parse(r.stdout) as ProfileResult;
        const samples = result.samples;
        assert.equal(result.problem, undefined);
        assert.ok(samples > 100, `samples: ${samples}; ${r.stderr}`);
        t.diagnostic(`profile in the container: ${samples} samples of a host busy loop over 2 s at 99 Hz; cpu check ${JSON.stringify(result.cpuCheck)}`);
      } finally {
        burner.kill('SIGKILL');
      }
    });
  });
});
