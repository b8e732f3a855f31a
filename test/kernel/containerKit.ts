// A bed for tracing programs in real containers (podman + runc, an image built from Debian's
// packages with its own OpenJDK 17, gcc and libc: other inodes than the host's files of the same
// path), from the host as root. Shared by every container test so each one states only what it
// checks.
//
// The image is cached between runs: podman's store keeps it, and the rootfs tarball stays in
// /var/cache/ebpf-studio-test/ (building it with mmdebstrap takes about a minute here, importing
// it ~15 s).
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { HistResult } from '../../extension/protocol/histogram';
import { kernelSkipReason, repoRoot, startCli, waitFor } from '../helpers';

export const IMAGE = 'localhost/ebpf-studio-test-jdk:1';
const CACHE = '/var/cache/ebpf-studio-test';
const TARBALL = path.join(CACHE, 'jdk-bookworm-1.tar');
export const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
/** A JDK path only the container has (made at its start): the host's lookup by name finds nothing. */
export const CONTAINER_ONLY_JDK = '/opt/ebpf-studio-container-only-jdk';
const PODMAN = ['--runtime', 'runc'];
const RUN = ['run', '--rm', '-i', '--network', 'none', '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];

function has(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

export function podman(args: string[], timeoutMs = 120_000) {
  return spawnSync('podman', [...PODMAN, ...args], { encoding: 'utf8', timeout: timeoutMs });
}

/** Makes the image once (mmdebstrap, then podman import) and says how long it took, or why it cannot. */
function prepareImage(): { skip?: string; note: string } {
  if (podman(['image', 'exists', IMAGE]).status === 0) return { note: `image ${IMAGE} cached` };
  const t0 = Date.now();
  let note = '';
  if (!fs.existsSync(TARBALL)) {
    fs.mkdirSync(CACHE, { recursive: true });
    const partial = `${TARBALL}.partial.tar`;
    const r = spawnSync('mmdebstrap', ['--variant=apt', '--include=openjdk-17-jdk-headless,gcc,libc6-dev', 'bookworm', partial], { encoding: 'utf8', timeout: 15 * 60_000 });
    if (r.status !== 0) {
      fs.rmSync(partial, { force: true });
      return { skip: `the test image could not be built (mmdebstrap exited ${r.status}: ${(r.stderr || String(r.error ?? '')).trim().split('\n').slice(-2).join(' ')})`, note };
    }
    fs.renameSync(partial, TARBALL);
    note += `rootfs built in ${((Date.now() - t0) / 1000).toFixed(0)} s; `;
  }
  const t1 = Date.now();
  const r = podman(['import', TARBALL, IMAGE], 10 * 60_000);
  if (r.status !== 0) return { skip: `podman import failed: ${r.stderr.trim().split('\n').pop()}`, note };
  return { note: `${note}imported in ${((Date.now() - t1) / 1000).toFixed(0)} s` };
}

/** Why container tests cannot run here, or a note on how the image was had. Call once per file. */
export function containerPrep(): { skip?: string; note: string } {
  const k = kernelSkipReason();
  if (k) return { skip: k, note: '' };
  const missing = ['podman', 'runc', 'mmdebstrap'].filter((c) => !has(c));
  if (missing.length) return { skip: `${missing.join(', ')} missing (apt-get install podman runc mmdebstrap, or scripts/install-deps.sh --test)`, note: '' };
  if (podman(['info'], 30_000).status !== 0) return { skip: 'podman cannot run containers here (podman --runtime runc info failed)', note: '' };
  return prepareImage();
}

export interface Contained {
  name: string;
  child: ChildProcess;
  out(): string;
  /** the pid of the container's main process as the host numbers it */
  hostPid: number;
  send(line: string): void;
  exited: Promise<number | null>;
}

export interface ContainerBedOptions {
  /** files under test/fixtures copied into the shared /app directory */
  fixtures: string[];
  /** the engine that runs the containers (default podman); docker needs the image as dockerImage() made it */
  engine?: 'podman' | 'docker';
  /** run them with ctr on this containerd instead (containerdDaemon(), started in an earlier before hook) */
  containerd?: () => Containerd;
  /** run them with rootless podman as this user instead (rootlessPodman(), started in an earlier before hook) */
  rootless?: () => RootlessPodman;
  /** a shell line run once in a throwaway container to build them with the image's own tools */
  build?: string;
}

/**
 * Registers before/after hooks in the calling describe(): a shared /app directory with the
 * fixtures (built inside the image), and containers that are removed at the end.
 */
export function containerBed(opts: ContainerBedOptions) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-ctr-'));
  const started: Contained[] = [];
  let seq = 0;
  const docker = opts.engine === 'docker';
  const engine = (args: string[], timeoutMs = 120_000) => {
    const user = opts.rootless?.();
    if (user) return spawnSync(...user.command(args), { encoding: 'utf8', timeout: timeoutMs });
    return docker ? spawnSync('docker', args, { encoding: 'utf8', timeout: timeoutMs }) : podman(args, timeoutMs);
  };
  const image = docker ? DOCKER_IMAGE : IMAGE;

  before(() => {
    fs.chmodSync(work, 0o755);
    for (const f of opts.fixtures) fs.copyFileSync(path.join(repoRoot, 'test', 'fixtures', f), path.join(work, path.basename(f)));
    // a rootless container's root is its user on the host: the shared directory is theirs
    const user = opts.rootless?.();
    if (user) for (const f of [work, ...fs.readdirSync(work).map((f) => path.join(work, f))]) fs.chownSync(f, user.uid, user.gid);
    if (!opts.build) return;
    const ctrd = opts.containerd?.();
    const r = ctrd ? ctrd.ctr(['run', '--rm', ...ctrd.mount(work), IMAGE, `ebpf-studio-build-${process.pid}`, 'sh', '-c', opts.build], 300_000) : engine([...RUN, '-v', `${work}:/app`, image, 'sh', '-c', opts.build]);
    assert.equal(r.status, 0, `building the fixtures in the container failed: ${r.stderr}`);
  });
  after(() => {
    const ctrd = opts.containerd?.();
    for (const c of started) {
      if (ctrd) ctrd.remove(c.name);
      else engine(['rm', '-f', ...(docker ? [] : ['-t', '0']), c.name], 30_000);
    }
    fs.rmSync(work, { recursive: true, force: true });
  });

  /** Starts `argv` in a new container (stdin and stdout attached), once it printed `ready`. */
  async function contained(argv: string[], extra: string[] = []): Promise<Contained> {
    const name = `ebpf-studio-test-${process.pid}-${++seq}`;
    const ctrd = opts.containerd?.();
    const child = ctrd
      ? spawn('ctr', [...ctrd.base, 'run', '--rm', ...ctrd.mount(work), IMAGE, name, ...argv], { stdio: ['pipe', 'pipe', 'inherit'] })
      : opts.rootless
        ? spawn(...opts.rootless().command([...RUN, '--name', name, '-v', `${work}:/app`, ...extra, image, ...argv]), { stdio: ['pipe', 'pipe', 'inherit'] })
        : spawn(docker ? 'docker' : 'podman', [...(docker ? [] : PODMAN), ...RUN, '--name', name, '-v', `${work}:/app`, ...extra, image, ...argv], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const c: Contained = { name, child, out: () => out, hostPid: 0, send: (l) => child.stdin!.write(l + '\n'), exited };
    started.push(c);
    assert.ok(await waitFor(() => out.includes('ready') || child.exitCode !== null, 60_000), `${argv.join(' ')} did not start in its container`);
    assert.ok(out.includes('ready'), `${argv.join(' ')} exited in its container: ${out}`);
    const pid = ctrd ? { stdout: String(ctrd.pidOf(name) ?? ''), stderr: 'no runc state' } : engine(['inspect', '-f', '{{.State.Pid}}', name], 30_000);
    c.hostPid = Number(pid.stdout.trim());
    assert.ok(c.hostPid > 0, `no host pid for ${name}: ${pid.stderr}`);
    return c;
  }

  /** A Serial-GC JVM in a container running GcWorkload (waits for a line, then its GCs), logging -Xlog:gc to /app. */
  async function jvm(fullGcs: number, allocMb: number, lingerMs: number, javaHome = JDK) {
    const log = `gc-${process.pid}-${seq + 1}.log`;
    const java = `${javaHome}/bin/java -XX:+UseSerialGC -Xmx64m -Xmn4m -Xlog:gc:file=/app/${log} -cp /app GcWorkload ${fullGcs} ${allocMb} ${lingerMs}`;
    const copy = javaHome === JDK ? '' : `cp -a ${JDK} ${javaHome} && `;
    const c = await contained(['sh', '-c', `${copy}exec ${java}`]);
    const counts = (line: string) => {
      const m = /young=(\d+) full=(\d+)/.exec(line);
      assert.ok(m, `no counts in ${line}`);
      return { young: Number(m[1]), full: Number(m[2]) };
    };
    const base = counts(c.out().split('\n')[0]);
    return {
      ...c,
      /** the JVM's own counts since go, and its log's pause lines */
      done: (async () => {
        assert.ok(await waitFor(() => c.out().includes('done'), 60_000), `GcWorkload did not finish: ${c.out()}`);
        const end = counts(c.out().split('\n').find((l) => l.startsWith('done'))!);
        const text = fs.readFileSync(path.join(work, log), 'utf8');
        return { young: end.young - base.young, full: end.full - base.full, logYoung: (text.match(/Pause Young/g) ?? []).length, logFull: (text.match(/Pause Full/g) ?? []).length };
      })(),
    };
  }

  return { work, contained, jvm };
}

/** Waits for the container's next stdout line matching re (lines already matched are not seen again). */
export function lineFollower(c: Contained, timeoutMs = 30_000) {
  let seen = 0;
  return async (re: RegExp): Promise<RegExpExecArray> => {
    let m: RegExpExecArray | null = null;
    const ok = await waitFor(() => {
      const lines = c.out().split('\n');
      for (let i = seen; i < lines.length - 1; i++) {
        m = re.exec(lines[i]);
        if (m) {
          seen = i + 1;
          return true;
        }
      }
      return false;
    }, timeoutMs);
    assert.ok(ok && m, `${c.name} did not say ${re} (output: ${c.out().slice(-500)})`);
    return m!;
  };
}

/** The limits every container here must start with (runc cannot raise this sandbox's nofile and nproc). */
export const ULIMITS = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];

/** A container's full id, as its cgroup path and the runtime's files name it. */
export function containerIdOf(name: string): string {
  const r = podman(['inspect', '-f', '{{.Id}}', name], 30_000);
  const id = r.stdout.trim();
  assert.match(id, /^[0-9a-f]{64}$/, `no id for ${name}: ${r.stderr}`);
  return id;
}

/** The test image in docker's store: the same name, loaded from podman's (dockerImage()). */
export const DOCKER_IMAGE = IMAGE;

/**
 * A docker daemon to run containers with: the running one, or one started here (no bridge, no
 * iptables rules: the containers need no network) that stop() ends. Call after containerPrep().
 * A string: why not.
 */
export async function dockerDaemon(): Promise<string | { started: boolean; stop(): void }> {
  if (!has('docker') || !has('dockerd')) return 'docker.io is not installed (scripts/install-deps.sh --test installs it)';
  const info = () => spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 30_000 }).status === 0;
  let daemon: ChildProcess | undefined;
  if (!info()) {
    const pidfile = path.join(os.tmpdir(), `ebpf-studio-dockerd-${process.pid}.pid`);
    daemon = spawn('dockerd', ['--bridge=none', '--iptables=false', '--ip6tables=false', '--exec-opt', 'native.cgroupdriver=cgroupfs', `--pidfile=${pidfile}`], { stdio: 'ignore' });
    if (!(await waitFor(() => info() || daemon!.exitCode !== null, 60_000)) || daemon.exitCode !== null) {
      daemon.kill('SIGTERM');
      return `dockerd did not start (exit ${daemon.exitCode})`;
    }
  }
  const stop = () => {
    if (!daemon || daemon.exitCode !== null) return;
    daemon.kill('SIGTERM');
    spawnSync('sh', ['-c', `for i in $(seq 100); do kill -0 ${daemon.pid} 2>/dev/null || exit 0; sleep 0.1; done`]);
  };
  return { started: daemon !== undefined, stop };
}

/** Puts podman's image into docker's store under the same name (docker-archive through a pipe), unless there. */
export function dockerImage(image: string): string | undefined {
  if (spawnSync('docker', ['image', 'inspect', image], { encoding: 'utf8' }).status === 0) return undefined;
  const r = spawnSync('sh', ['-c', `podman save --format docker-archive ${image} | docker load`], { encoding: 'utf8', timeout: 10 * 60_000 });
  return r.status === 0 ? undefined : `docker load of ${image} failed: ${r.stderr.trim().split('\n').pop()}`;
}

/** An image with node (scripts/build-agent-image.sh makes it): our CLI runs in it from the host's dist/, bind-mounted. */
export const NODE_IMAGE = 'localhost/ebpf-studio-agent-test:1';

/**
 * Runs `sh -c script` in a fresh NODE_IMAGE container started with `runArgs`, where $CLI is the
 * host's dist/cli.js (read-only) under node; the container is removed on exit (and by `stop`).
 */
export function shellInNodeContainer(runArgs: string[], script: string) {
  const name = `ebpf-studio-dcx-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const child = spawn('podman', [...PODMAN, ...RUN, '--name', name, '-e', 'CLI=/opt/ebpf-studio/dist/cli.js', '-v', `${path.join(repoRoot, 'dist')}:/opt/ebpf-studio/dist:ro`, '--entrypoint', 'sh', ...runArgs, NODE_IMAGE, '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((r) => child.on('exit', (code) => r({ code, stdout, stderr })));
  return { name, stdout: () => stdout, stderr: () => stderr, done, stop: () => podman(['rm', '-f', '-t', '0', name], 30_000) };
}

/** A containerd of the test's own (root, state and socket under a temporary directory), driven with ctr in one namespace. */
export interface Containerd {
  /** ctr's global arguments: this daemon's socket and the test's namespace */
  base: string[];
  namespace: string;
  ctr(args: string[], timeoutMs?: number): SpawnSyncReturns<string>;
  /** ctr run's arguments that bind `dir` at /app */
  mount(dir: string): string[];
  /** a task's host pid, from the runc state the shim keeps (/run/containerd/runc/NS/ID/state.json) */
  pidOf(id: string): number | undefined;
  /** kills a task and removes its container */
  remove(id: string): void;
  /** how long the image import took */
  note: string;
  stop(): void;
}

/**
 * Starts a private containerd (no docker: only containerd, its runc shim and ctr), imports the test
 * image into it (podman save as an OCI archive, then ctr images import) and returns it; a string says
 * why not. stop() removes every container of its namespace, ends the daemon and deletes its files.
 */
export async function containerdDaemon(): Promise<string | Containerd> {
  if (!has('containerd') || !has('ctr') || !has('containerd-shim-runc-v2')) return 'containerd is not installed (docker.io brings it: scripts/install-deps.sh --test)';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-containerd-'));
  const sock = path.join(dir, 'containerd.sock');
  const namespace = `ebpf-studio-${process.pid}`;
  const base = ['-a', sock, '-n', namespace];
  const ctr = (args: string[], timeoutMs = 120_000) => spawnSync('ctr', [...base, ...args], { encoding: 'utf8', timeout: timeoutMs });
  fs.writeFileSync(path.join(dir, 'config.toml'), `version = 2\nroot = "${dir}/root"\nstate = "${dir}/state"\n[grpc]\n  address = "${sock}"\n`);
  const daemon = spawn('containerd', ['--config', path.join(dir, 'config.toml')], { stdio: 'ignore' });
  const pidOf = (id: string) => {
    try {
      return (JSON.parse(fs.readFileSync(`/run/containerd/runc/${namespace}/${id}/state.json`, 'utf8')) as { init_process_pid?: number }).init_process_pid;
    } catch {
      return undefined;
    }
  };
  const remove = (id: string) => {
    ctr(['task', 'kill', '-s', 'KILL', id], 30_000);
    ctr(['task', 'rm', '-f', id], 30_000);
    ctr(['containers', 'rm', id], 30_000);
  };
  const stop = () => {
    for (const id of ctr(['containers', 'ls', '-q']).stdout.split('\n').filter(Boolean)) remove(id);
    if (daemon.exitCode === null) {
      daemon.kill('SIGTERM');
      spawnSync('sh', ['-c', `for i in $(seq 100); do kill -0 ${daemon.pid} 2>/dev/null || exit 0; sleep 0.1; done; kill -9 ${daemon.pid}`]);
    }
    // nothing stays mounted once the tasks are gone; the image's snapshots are deleted with the directory
    spawnSync('sh', ['-c', `grep -o " ${dir}/[^ ]*" /proc/self/mounts | sort -r | xargs -r umount -l`]);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(`/run/containerd/runc/${namespace}`, { recursive: true, force: true });
    // the shim makes a cgroup per namespace (cgroupfs: /NS/ID) in every hierarchy and leaves it, empty
    for (const h of ['', ...fs.readdirSync('/sys/fs/cgroup')]) {
      try {
        fs.rmdirSync(path.join('/sys/fs/cgroup', h, namespace));
      } catch {
        /* none there, or still busy */
      }
    }
  };
  const up = () => ctr(['version'], 10_000).status === 0;
  if (!(await waitFor(() => up() || daemon.exitCode !== null, 30_000)) || daemon.exitCode !== null) {
    stop();
    return `containerd did not start (exit ${daemon.exitCode})`;
  }
  const t0 = Date.now();
  const archive = path.join(dir, 'image.tar');
  const save = spawnSync('podman', ['save', '--format', 'oci-archive', '-o', archive, IMAGE], { encoding: 'utf8', timeout: 10 * 60_000 });
  const imp = save.status === 0 ? ctr(['images', 'import', '--base-name', IMAGE.replace(/:[^:]*$/, ''), archive], 10 * 60_000) : save;
  fs.rmSync(archive, { force: true });
  if (imp.status !== 0) {
    stop();
    return `the test image could not be put into containerd: ${(imp.stderr || '').trim().split('\n').pop()}`;
  }
  const mount = (d: string) => ['--mount', `type=bind,src=${d},dst=/app,options=rbind:rw`];
  return { base, namespace, ctr, mount, pidOf, remove, stop, note: `image saved and imported into containerd in ${((Date.now() - t0) / 1000).toFixed(0)} s` };
}

/** A user the test made, with the test image in their own rootless podman store. */
export interface RootlessPodman {
  user: string;
  uid: number;
  gid: number;
  home: string;
  /** the command and arguments that run `podman ARGS` as the user (their storage driver, runc) */
  command(args: string[]): [string, string[]];
  /** the storage driver: overlay where the kernel mounts it in a user namespace (each container starts in well under a second), else vfs (each start copies the image) */
  driver: 'overlay' | 'vfs';
  /** how the user and the image were had */
  note: string;
  /** ends the user's processes (containers, podman's pause process), deletes the user, their files and subordinate ids */
  stop(): void;
}

/** Why rootless podman cannot run here (checked before any user is made), or undefined. */
export function rootlessSkipReason(): string | undefined {
  const missing = ['podman', 'runc', 'newuidmap', 'newgidmap', 'useradd', 'userdel', 'runuser'].filter((c) => !has(c));
  if (missing.length) return `${missing.join(', ')} missing (rootless podman needs the uidmap package: scripts/install-deps.sh --test)`;
  if (!fs.existsSync(TARBALL)) return `the image's rootfs tarball ${TARBALL} is missing (containerPrep() makes it)`;
  const max = Number(fs.readFileSync('/proc/sys/user/max_user_namespaces', 'utf8'));
  if (!(max > 0)) return 'user namespaces are disabled (user.max_user_namespaces is 0)';
  return undefined;
}

/**
 * Makes a user (home under the temporary directory; subordinate ids from useradd's own ranges),
 * checks that podman runs rootless for them and imports the image's tarball into their store.
 * A string: why rootless podman does not work here.
 */
export function rootlessPodman(): string | RootlessPodman {
  const user = `ebpfRl${process.pid % 100000}`;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-rootless-'));
  fs.rmdirSync(home);
  const add = spawnSync('useradd', ['-m', '-d', home, '-U', '-s', '/bin/sh', user], { encoding: 'utf8' });
  if (add.status !== 0) return `useradd ${user} failed: ${add.stderr.trim()}`;
  const id = (flag: string) => Number(spawnSync('id', [flag, user], { encoding: 'utf8' }).stdout.trim());
  const [uid, gid] = [id('-u'), id('-g')];
  const env = ['env', '-i', `HOME=${home}`, `USER=${user}`, `LOGNAME=${user}`, 'PATH=/usr/sbin:/usr/bin:/sbin:/bin'];
  const as = (driver: string, args: string[]): [string, string[]] => ['runuser', ['-u', user, '--', ...env, 'podman', `--storage-driver=${driver}`, '--runtime', 'runc', ...args]];
  const overlay = spawnSync(...as('overlay', ['info', '--format', '{{.Store.GraphStatus}}']), { encoding: 'utf8', timeout: 60_000 });
  const driver = overlay.status === 0 && overlay.stdout.includes('Native Overlay Diff:true') ? 'overlay' : 'vfs';
  const command = (args: string[]) => as(driver, args);
  const stop = () => {
    spawnSync(...command(['rm', '-a', '-f', '-t', '0']), { timeout: 60_000 });
    // podman leaves a pause process (catatonit) holding the user namespace: end each of the user's processes by pid
    for (let round = 0; round < 3; round++) {
      const pids = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).filter((e) => {
        try {
          return fs.statSync(`/proc/${e}`).uid === uid;
        } catch {
          return false;
        }
      });
      for (const p of pids) spawnSync('kill', ['-9', p]);
      if (!pids.length) break;
      spawnSync('sleep', ['0.3']);
    }
    spawnSync('userdel', ['-r', '-f', user], { encoding: 'utf8' });
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(`/tmp/podman-run-${uid}`, { recursive: true, force: true });
    fs.rmSync(`/tmp/containers-user-${uid}`, { recursive: true, force: true });
  };
  const subuids = fs.readFileSync('/etc/subuid', 'utf8').split('\n').filter((l) => l.startsWith(`${user}:`));
  const info = spawnSync(...command(['info', '--format', '{{.Host.CgroupsVersion}} {{.Host.CgroupManager}} {{.Store.GraphDriverName}}']), { encoding: 'utf8', timeout: 60_000 });
  if (info.status !== 0) {
    stop();
    return `podman does not run rootless here (subordinate ids ${subuids.join(' ') || 'none'}): ${info.stderr.trim().split('\n').pop()}`;
  }
  const t0 = Date.now();
  const imp = spawnSync(...command(['import', TARBALL, IMAGE]), { encoding: 'utf8', timeout: 10 * 60_000 });
  if (imp.status !== 0) {
    stop();
    return `podman import as ${user} failed: ${imp.stderr.trim().split('\n').pop()}`;
  }
  return { user, uid, gid, home, command, driver, stop, note: `rootless podman as ${user} (uid ${uid}, ${subuids.join(' ')}): cgroups ${info.stdout.trim()}; image imported into the user's store in ${((Date.now() - t0) / 1000).toFixed(0)} s` };
}

/** Timeslices run by every thread of these processes so far (the third field of /proc/PID/task/TID/schedstat). */
export function timeslices(pids: number[]): number {
  let n = 0;
  for (const p of pids) {
    for (const tid of fs.readdirSync(`/proc/${p}/task`)) {
      try {
        n += Number(fs.readFileSync(`/proc/${p}/task/${tid}/schedstat`, 'utf8').split(' ')[2]);
      } catch {
        /* the thread ended */
      }
    }
  }
  return n;
}

/**
 * `runqlat --container NAME --per-process` against the container's own schedstat: each timeslice run
 * follows one wait in the run queue, so its waits are within 10 % of the timeslices its processes
 * (`procs()`, read at each end of the window) ran while it was attached, and every process it
 * names is one of them (at least `minProcs`).
 */
export async function runqlatMatchesSchedstat(name: string, durationS: number, procs: () => number[], minProcs: number, t: { diagnostic(s: string): void }): Promise<HistResult> {
  const cli = startCli(['runqlat', '--container', name, '--per-process', '--duration', String(durationS), '--json', '--verbose']);
  assert.ok(await waitFor(() => /runqlat: attached via/.test(cli.stderr()) || cli.child.exitCode !== null, 20_000), cli.stderr());
  const before = timeslices(procs());
  const r = await cli.done;
  const after = timeslices(procs());
  assert.equal(r.code, 0, r.stderr);
  const res = JSON.parse(r.stdout) as HistResult;
  const ours = res.histograms.reduce((n, h) => n + h.count, 0);
  t.diagnostic(`runqlat: ${ours} waits in ${res.histograms.length} processes (${res.histograms.map((h) => `${h.key} ${h.comm}`).join(', ')}); their schedstat: ${after - before} timeslices`);
  const pids = new Set(procs());
  assert.ok(res.histograms.length >= minProcs && res.histograms.every((h) => pids.has(h.key)), "only the container's processes");
  assert.ok(Math.abs(ours - (after - before)) <= 0.1 * (after - before), `waits ${ours} within 10 % of the timeslices ${after - before}`);
  return res;
}
