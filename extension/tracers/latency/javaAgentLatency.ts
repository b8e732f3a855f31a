// Java method latency on JDK 17 to 23 through our own agent (native/javalatency): a jar placed in
// the JVM's /tmp as its owner (the JVMTI agent's placement and checks), loaded with the HotSpot
// attach `load instrument` command (what VirtualMachine.loadAgent sends), which retransforms the
// method's class to time every call, and puts it back at `stop`. The agent writes a small JSON
// snapshot into the JVM's /tmp every interval; it is read here as the JVM's owner inside its root
// (never through a link, never a FIFO: O_NONBLOCK and a regular-file check), capped in size and
// parsed without trust (./javaSnapshot.ts). Nothing stays running in the JVM after the session: the
// writer thread ends and the class is retransformed from its original bytes (the agent's classes
// stay loaded, as every java.lang.instrument agent's do). Should we die without sending `stop`,
// the lease file we keep fresh beside the snapshot goes stale and the agent stops itself.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { CallerLatency, LatencyOptions, LatencyProbe, LatencyResult, LatencyStats, SlowCall } from '../../protocol/latency';
import { inputError, StudioError, unsuitableError } from '../../protocol/errors';
import { attachCommand, namespacePid } from '../../sys/jvm/attach';
import { createAs, openAs, unlinkAs, type FileOwner } from '../../sys/asUser';
import { contentTag, placeCopy } from '../../sys/placeCopy';
import { assertOwnProcess, effectiveIds, requester } from '../../sys/ownership';
import { checkPid, identify, type ProcessIdentity } from '../../sys/proc/processes';
import type { Session, SessionEvents, TracerEnv } from '../tracer';
import { watchTarget } from '../targetWatch';
import { HistAggregate } from '../histDecode';
import { percentile } from './decode';
import { javaMethodOf, type JavaMethod } from './javaTarget';
import { parseSnapshot, SNAPSHOT_MAX_BYTES, SnapshotError, type JavaSnapshot } from './javaSnapshot';
import { javaCallerRows } from '../../model/javaCallers';
import { endJavaSlowProfile, startJavaSlowProfile, withProfileStats, type JavaSlowProfile } from './javaSlowProfile';

export const JAVALATENCY_FILE = 'ebpf-studio-javalatency.jar';
const ATTACH = { timeoutMs: 20_000 };
const SLOW_KEPT = 100;
/** HotSpot's attach arguments are at most 1024 bytes each. */
const ATTACH_ARG_MAX = 1024;

/** Places the agent's jar in the JVM's /tmp as its owner; the path as the JVM sees it (./agent.ts placeAgent's rules). */
function placeJar(owner: FileOwner, bytes: Buffer): string {
  const hash = contentTag(bytes);
  const names = [`/tmp/ebpf-studio-javalatency-${hash}.jar`, `/tmp/ebpf-studio-javalatency-${hash}${owner.uid.toString(16).padStart(8, '0')}.jar`];
  const refused: string[] = [];
  for (const name of names) {
    const why = placeCopy(owner, name, bytes);
    if (why === undefined) return name;
    refused.push(why);
  }
  throw unsuitableError(`cannot place the Java latency agent in pid ${owner.pid}'s /tmp: ${refused.join('; ')}: remove them and retry`);
}

/** Refusals before anything is written into the JVM. */
function checkJvm(pid: number): void {
  let cmdline: string[];
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    throw inputError(`no process with pid ${pid} is running`);
  }
  if (cmdline.includes('-XX:+DisableAttachMechanism')) throw unsuitableError(`pid ${pid} runs with -XX:+DisableAttachMechanism, so no agent can time its methods: remove that flag`);
  if (cmdline.includes('-XX:-EnableDynamicAgentLoading')) throw unsuitableError(`pid ${pid} runs with -XX:-EnableDynamicAgentLoading, so no agent can time its methods: start it with -XX:+EnableDynamicAgentLoading`);
}

/** One `load instrument` command: the agent runs the command and answers in its snapshot file. */
async function loadCommand(pid: number, jar: string, args: string): Promise<void> {
  const arg = `${jar}=${args}`;
  if (Buffer.byteLength(arg) >= ATTACH_ARG_MAX) throw inputError('the method name is too long for the JVM attach request');
  const out = await attachCommand(pid, 'load', ['instrument', 'false', arg], ATTACH);
  if (/Dynamic agent loading is not enabled/.test(out)) throw unsuitableError(`pid ${pid} does not allow agents to be loaded (-XX:-EnableDynamicAgentLoading): start it with -XX:+EnableDynamicAgentLoading`);
  const m = /return code:\s*(-?\d+)/.exec(out);
  if (m && m[1] !== '0') throw unsuitableError(`the JVM (pid ${pid}) could not load the Java latency agent (return code ${m[1]}): ${out.trim().slice(0, 300)}`);
}

/** The agent's snapshot, read as the JVM's owner: a regular file, at most SNAPSHOT_MAX_BYTES; undefined when absent. */
export function readSnapshot(owner: FileOwner, file: string): JavaSnapshot | undefined {
  let fd: number;
  try {
    fd = openAs(owner, file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SnapshotError(`the snapshot ${file} cannot be opened as uid ${owner.uid} without following a link (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new SnapshotError(`the snapshot ${file} is not a regular file`);
    const buf = Buffer.alloc(Math.min(SNAPSHOT_MAX_BYTES + 1, Math.max(0, st.size) + 1));
    let got = 0;
    for (let n; got < buf.length && (n = fs.readSync(fd, buf, got, buf.length - got, got)) > 0; ) got += n;
    if (got > SNAPSHOT_MAX_BYTES) throw new SnapshotError(`the snapshot ${file} is larger than ${SNAPSHOT_MAX_BYTES} bytes`);
    return parseSnapshot(buf.subarray(0, got).toString('utf8'));
  } finally {
    fs.closeSync(fd);
  }
}

export function agentStats(snap: JavaSnapshot, seconds: number, thresholdMs: number): LatencyStats {
  return {
    count: snap.count,
    totalNs: snap.sumNs,
    p50Ns: Math.round(percentile(snap.fine, 50)),
    p90Ns: Math.round(percentile(snap.fine, 90)),
    p99Ns: Math.round(percentile(snap.fine, 99)),
    maxNs: snap.maxNs,
    callsPerS: snap.count / Math.max(0.001, seconds),
    abandoned: 0,
    exited: 0,
    tooDeep: 0,
    slowLost: 0,
    ...(thresholdMs ? { slowCalls: snap.slowCalls } : {}),
  };
}

/** The agent stops itself when the lease file beside its snapshot is this stale (we died without a stop). */
export function leaseMs(intervalS: number): number {
  return Math.max(15_000, Math.round(intervalS * 10_000));
}

/** Creates (fresh) or renews the lease as the JVM's owner, never through a link or into a FIFO. */
function renewLease(owner: FileOwner, file: string, create: boolean): void {
  const c = fs.constants;
  const fd = create ? createAs(owner, file, 0o600) : openAs(owner, file, c.O_WRONLY | c.O_NONBLOCK);
  try {
    if (!fs.fstatSync(fd).isFile()) throw new Error(`${file} is not a regular file`);
    const now = new Date();
    fs.futimesSync(fd, now, now);
  } finally {
    fs.closeSync(fd);
  }
}

interface Placed {
  owner: FileOwner;
  jar: string;
  out: string;
  id: string;
}

class AgentLatencySession {
  private readonly agg: HistAggregate<'latency'>;
  private readonly kept: SlowCall[] = [];
  private readonly seenSeq = new Set<number>();
  private prevLog2: number[] = [];
  private last?: JavaSnapshot;
  private readonly t0 = Date.now();
  private readonly timer: NodeJS.Timeout;
  private readonly unwatch: () => void;
  private reading: Promise<void> = Promise.resolve();
  closed = false;

  constructor(
    private readonly o: LatencyOptions,
    private readonly p: Placed,
    readonly probe: LatencyProbe,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'latency'>,
    private readonly target: ProcessIdentity,
  ) {
    this.agg = new HistAggregate('latency', 'none', o.unit);
    this.timer = setInterval(() => void this.serial(() => this.collect(this.read())), o.intervalS * 1000);
    this.unwatch = watchTarget(target, () => this.ended());
  }

  read(): JavaSnapshot | undefined {
    try {
      renewLease(this.p.owner, `${this.p.out}.lease`, false);
    } catch (e) {
      this.env.log(`latency: renewing the agent's lease failed: ${(e as Error).message}`);
    }
    try {
      return readSnapshot(this.p.owner, this.p.out);
    } catch (e) {
      this.env.log(`latency: reading the agent's snapshot failed: ${(e as Error).message}`);
      return undefined;
    }
  }

  /** Folds one snapshot in: the interval's histogram column, new slow calls, and an update. */
  collect(snap: JavaSnapshot | undefined): void {
    if (!snap || snap.state === 'error' || snap.id !== this.p.id) return;
    this.last = snap;
    this.prof?.windows.add(snap);
    const delta = snap.log2.map((c, i) => Math.max(0, c - (this.prevLog2[i] ?? 0)));
    this.prevLog2 = snap.log2;
    const fresh = snap.slow.filter((c) => !this.seenSeq.has(c.seq)).sort((a, b) => b.durationNs - a.durationNs);
    for (const c of fresh) this.seenSeq.add(c.seq);
    const slow = fresh.map(({ durationNs, endNs, tid, stack }) => ({ durationNs, endNs, tid, stack }));
    this.kept.push(...slow);
    this.kept.sort((a, b) => b.durationNs - a.durationNs).splice(SLOW_KEPT);
    const interval = this.agg.addInterval([{ key: -1, epoch: 0, slots: delta, comm: '' }], Number(process.hrtime.bigint()), 0);
    const callers = this.callers();
    if (!this.closed) this.events.update({ ...interval, stats: this.stats(), slow: slow.slice(0, 50), ...(callers ? { callers } : {}) });
  }

  /** byCaller: every caller so far (the agent counts them cumulatively), merged per calling method. */
  private callers(): CallerLatency[] | undefined {
    if (!this.o.byCaller) return undefined;
    const c = this.last?.callers;
    return c ? javaCallerRows(c.sites, c.other, c.max) : [];
  }

  /** profileSlow: the wall-clock profile of the JVM, kept to the slow calls' windows */
  prof?: JavaSlowProfile;

  stats(): LatencyStats {
    return withProfileStats(this.statsOfSnapshot(), this.prof);
  }

  private statsOfSnapshot(): LatencyStats {
    return agentStats(this.last ?? { state: 'running', id: '', count: 0, sumNs: 0, maxNs: 0, slowCalls: 0, methods: [], log2: [], fine: [], slow: [] }, (Date.now() - this.t0) / 1000, this.o.thresholdMs);
  }

  serial(f: () => void | Promise<void>): Promise<void> {
    this.reading = this.reading.then(f).catch((e) => this.env.log(`latency: ${(e as Error).message}`));
    return this.reading;
  }

  result(): LatencyResult {
    const methods = this.last?.methods ?? [];
    const probe = methods.length ? { ...this.probe, function: methods.length === 1 ? methods[0] : `${this.probe.function} (${methods.length} methods: ${methods.slice(0, 5).join(', ')})` } : this.probe;
    return { ...this.agg.result(0), probe, stats: this.stats(), slow: [...this.kept], ...(this.prof?.result ? { profile: this.prof.result } : {}), ...(this.o.byCaller ? { callers: this.callers() } : {}) };
  }

  /** Asks the agent to put the class back and write its last snapshot, folds that in, removes the files. */
  async finish(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.timer);
    this.unwatch();
    try {
      await loadCommand(this.o.pid, this.p.jar, `stop,id=${this.p.id},out=${this.p.out}`);
      this.collect(this.read());
    } catch (e) {
      this.env.log(`latency: stopping the agent in pid ${this.o.pid} failed: ${(e as Error).message}`);
    } finally {
      this.closed = true;
      removeOut(this.p);
    }
    // every window is known once the agent stopped
    if (this.prof) await endJavaSlowProfile(this.prof, this.env.log);
  }

  private ended(): void {
    if (this.closed) return;
    clearInterval(this.timer);
    this.unwatch();
    this.closed = true;
    void (this.prof ? endJavaSlowProfile(this.prof, this.env.log) : Promise.resolve()).then(() => this.events.ended('target-exited', `process ${this.o.pid} exited`));
  }
}

function removeOut(p: Placed): void {
  for (const f of [p.out, `${p.out}.new`, `${p.out}.lease`]) {
    try {
      unlinkAs(p.owner, f);
    } catch {
      /* not created, or gone with the JVM */
    }
  }
}

function startArgs(m: JavaMethod, o: LatencyOptions, id: string, out: string): string {
  const desc = m.descriptor ? `,desc=${m.descriptor}` : '';
  return `start,id=${id},class=${m.className},method=${m.method}${desc},out=${out},threshold=${Math.round(o.thresholdMs * 1e6)},unit=${o.unit === 'ms' ? 1_000_000 : 1000},interval=${Math.round(o.intervalS * 1000)},slow=${SLOW_KEPT},lease=${leaseMs(o.intervalS)}${o.profileSlow ? ',profile=1' : ''}${o.byCaller ? ',callers=1' : ''}`;
}

/** Places the jar, sends `start`, and reads the agent's answer: the first snapshot, or its error. */
async function startAgent(o: LatencyOptions, env: TracerEnv, m: JavaMethod): Promise<Placed> {
  const jarFile = path.join(env.assetDir, JAVALATENCY_FILE);
  if (!fs.existsSync(jarFile)) throw unsuitableError(`the Java latency agent is not built (${jarFile} is missing: the build found no JDK 17 to 23 with javac). Install one (apt-get install openjdk-17-jdk-headless) and run \`npm run build\``);
  checkJvm(o.pid);
  const ids = effectiveIds(o.pid);
  const owner: FileOwner = { uid: ids.uid, gid: ids.gid, pid: o.pid };
  const jar = placeJar(owner, fs.readFileSync(jarFile));
  const id = crypto.randomBytes(6).toString('hex');
  const out = `/tmp/.ebpf-studio-latency-${namespacePid(o.pid)}-${id}.json`;
  const p = { owner, jar, out, id };
  try {
    renewLease(owner, `${out}.lease`, true);
  } catch (e) {
    throw unsuitableError(`cannot create the agent's lease file ${out}.lease in pid ${o.pid}'s /tmp as uid ${owner.uid}: ${(e as Error).message}`);
  }
  try {
    await loadCommand(o.pid, jar, startArgs(m, o, id, out));
  } catch (e) {
    removeOut(p);
    throw e;
  }
  let snap: JavaSnapshot | undefined;
  let unread: string | undefined;
  try {
    snap = readSnapshot(owner, out);
  } catch (e) {
    unread = (e as Error).message;
  }
  // the JVM keeps the agent classes of its first load: one from before figures by caller (or the
  // slow calls' windows) ignores the ask
  const answered = snap && snap.state !== 'error' && snap.id === id ? snap : undefined;
  const stale = answered && o.byCaller && !answered.callers ? 'split calls by caller: restart the JVM to use --by-caller' : answered && o.profileSlow && !answered.windows ? "time the slow calls' windows: restart the JVM to use --profile-slow" : undefined;
  if (!snap || snap.state === 'error' || snap.id !== id || stale) {
    // whatever the answer, no session is left running in the JVM (stop of an unknown id does nothing)
    await loadCommand(o.pid, jar, `stop,id=${id},out=${out}`).catch(() => undefined);
    removeOut(p);
    if (unread) throw unsuitableError(`the Java latency agent's answer in pid ${o.pid} could not be read: ${unread}`);
    if (stale) throw unsuitableError(`pid ${o.pid} runs an older copy of the Java latency agent (loaded by an earlier session), which cannot ${stale}`);
    const why = snap?.state === 'error' ? snap.error : 'it wrote no answer';
    throw new StudioError(/not loaded|no method|several loaded/.test(why ?? '') ? 'input' : 'unsuitable', `pid ${o.pid}: ${why}`);
  }
  env.log(`latency: the Java agent times ${snap.methods.join(', ')} in pid ${o.pid} (${jar}, snapshot ${out})`);
  return p;
}

/** The latency session of a Java method on a JDK 17 to 23 JVM. */
export async function startAgentLatency(o: LatencyOptions, env: TracerEnv, events: SessionEvents<'latency'>, feature: number | undefined): Promise<Session<'latency'>> {
  checkPid(o.pid);
  assertOwnProcess(o.pid, 'measuring a Java method', env.requester ?? requester());
  const target = identify(o.pid);
  if (!target) throw inputError(`no process with pid ${o.pid} is running (check with: ps -p ${o.pid})`);
  const m = javaMethodOf(o.pid, o.target);
  const prof = o.profileSlow ? await startJavaSlowProfile(o, env) : undefined;
  let p: Placed;
  try {
    p = await startAgent(o, env, m);
  } catch (e) {
    await prof?.off.stop().catch(() => undefined);
    throw e;
  }
  const probe: LatencyProbe = { function: `${m.className}.${m.method}${m.descriptor}`, module: `JVM pid ${o.pid} (JDK ${feature ?? '?'}): Java agent`, address: '0x0', returns: 'java-agent' };
  const s = new AgentLatencySession(o, p, probe, env, events, target);
  s.prof = prof;
  s.collect(s.read());
  return {
    targets: [o.pid],
    warnings: [],
    snapshot: () => s.result(),
    async stop() {
      await s.serial(() => s.finish());
      return s.result();
    },
  };
}
