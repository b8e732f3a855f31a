// `profile --java agent`: loads eBPF Studio's JVMTI agent (native/jvmagent/agent.c) into a running
// JVM through the HotSpot attach socket, lets the profiler's BPF program signal each sampled
// thread (bpf/profile.bpf.c, signal_target), and joins the agent's Java stacks with the BPF
// kernel/native stacks (./javaAgentDecode.ts).
//
// Channel agent → helper: a text file the agent writes in the JVM's own /tmp, read here through
// /proc/PID/root/tmp. Chosen over a Unix socket because (1) it needs no server or accept loop in
// the JVM, so nothing in the target blocks on us and a helper that dies leaves no stuck thread;
// (2) /proc/PID/root reaches the JVM's mount namespace from the host, while a socket bound inside a
// container's /tmp would need setns or a path translation on connect; (3) the file is flushed by
// the agent's own service thread, never by the signal handler, so the handler stays lock-free.
// The file is removed at the end of the profile.
//
// Containers: the agent, the attach socket and the sample file live in the JVM's /tmp, reached
// through /proc/PID/root. The agent records gettid(), which inside a pid namespace is the
// namespace's tid, while BPF sees host tids: the BPF join record carries both (bpf/profile.h,
// ns_tid, read from the task's struct pid in the kernel), so the join is exact even for threads
// that ended before user space could have looked their NSpid up in /proc.
//
// Who may: checkAgentTarget refuses, before anything is written into the target, a JVM with attach
// or dynamic agent loading disabled, a JVM of another user unless the requester is root (the
// helper passes its invoking user, not its own root), and a libjvm.so without AsyncGetCallTrace.
// Join while sampling: the file is read every 500 ms and at each live snapshot (complete lines
// only, from the last offset). Each BPF sample is paired with its record by tid and the first
// following timestamp (./javaAgentDecode.ts IncrementalPairer) as soon as that pairing can no
// longer change: the agent's T lines say up to when its records are all written, and the ring
// buffers deliver samples in time order (give or take SAMPLE_SKEW_NS). Undecided samples wait
// for a later snapshot, so a live graph never shows a sample unjoined that the next one joins,
// and the final profile is the same as pairing everything at the end. Decided samples are
// counted per (thread, native stack, record), so memory grows with distinct stacks.
//
// The native half comes from either unwind mode: frame-pointer stack ids through the
// java_samples ring, or (--unwind dwarf/auto) the user stack unwound by CFI from the sample's
// stack copy. joinStack keeps it up to the first JIT or interpreter frame (where CFI ends and
// frame-pointer guesses through JIT code begin) and puts the agent's Java frames above.
//
// Lifecycle: JVMTI agents cannot be unloaded. The first profile loads the agent (a copy of our .so
// inside the JVM's /tmp, named by its content hash, owned by the JVM's user, so a container's
// JVM can open it and the same file is reused); `stop` switches it off: the handler stays
// installed but records nothing, its thread sleeps, and no signal reaches the JVM any more because
// the BPF program is gone; its code-cache events are switched off too (agent.c says what that
// costs in precision). The next profile sends `start` to the same loaded copy.
//
// Java frame types (interpreted, C1, C2, inlined) come from the agent's code-cache records and
// `jcmd Compiler.codelist`, asked at the start and at the end of the profile (./javaFrameTypes.ts).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { BpfObject, RingBufferHandle } from '../../../native/index';
import type { ProfileFrame, ProfileResult, ThreadState } from '../../protocol/profile';
import { StudioError, unsuitableError } from '../../protocol/errors';
import { attachCommand, jcmd, namespacePid } from '../../sys/jvm/attach';
import { openAs, unlinkAs, type FileOwner } from '../../sys/asUser';
import { contentTag, placeCopy } from '../../sys/placeCopy';
import { effectiveIds, foreignOwner as ownerIfForeign } from '../../sys/ownership';
import { withElf } from '../../sys/elf/elf';
import { readMaps, type Mapping } from '../../sys/proc/maps';
import { mountAt, readMountinfo } from '../../sys/proc/mounts';
import { identify, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { holdReaderLock, noteAgentLimit } from './readerLock';
import type { TracerEnv } from '../tracer';
import type { RawStack } from '../profile/stacks';
import { ALL_IN, decodeJavaSample, emptyAgentLog, foldStacks, IncrementalPairer, joinStack, parseAgentText, type AgentLog, type AgentRecord, type TimedSample } from './decode';
import { classesKey, CodeCache, frameClasses, parseCodelist, restoreRecoveredLeaf, typesOf, type FrameClass } from './frameTypes';

export const JVMAGENT_FILE = 'libebpf-studio-jvmagent.so';
export type JavaMode = 'agent' | 'perfmap' | 'auto';
export const JAVA_MODES: JavaMode[] = ['agent', 'perfmap', 'auto'];

/** Agent_OnAttach's return codes (agent.c) as user-facing reasons. */
const AGENT_CODES: Record<number, string> = {
  100: 'this JVM has no AsyncGetCallTrace (not a HotSpot JDK, or a build without it): use --java perfmap with -XX:+PreserveFramePointer',
  101: 'another profiler already handles SIGPROF in this JVM (async-profiler or similar): stop it, or use --java perfmap',
  102: 'the JVM refused a JVMTI environment to the agent',
  103: "the agent could not create its output file in the JVM's /tmp (read-only or full /tmp?)",
  104: 'the agent rejected its options (a mismatched agent build?)',
  105: 'the JVM is out of memory for the agent\'s sample buffers',
  106: "the agent does not recognise this JVM's thread layout (not a HotSpot JVM?): use --java perfmap",
};

export function agentLibrary(assetDir: string): string | undefined {
  const p = path.join(assetDir, JVMAGENT_FILE);
  return fs.existsSync(p) ? p : undefined;
}

export function agentUnavailableMessage(assetDir: string): string {
  return `the JVM agent is not built (${path.join(assetDir, JVMAGENT_FILE)} is missing: the build found no JDK headers). Install a JDK (apt-get install openjdk-17-jdk-headless) and run \`npm run build\`, or use --java perfmap with a JVM started with -XX:+PreserveFramePointer`;
}

/** Who asks for the agent: the helper's invoking user (pkexec/sudo), or the CLI's own euid. */
export interface AgentRequester {
  uid: number;
  /** how the helper decided it (e.g. "SUDO_UID"), for the message */
  source?: string;
}

/**
 * The owner's uid when `pid` belongs to another user than the requester and the requester is not
 * root, else undefined (extension/sys/ownership.ts, the one check every tracer goes through).
 */
export function foreignOwner(pid: number, requester: AgentRequester = { uid: process.geteuid?.() ?? 0 }): number | undefined {
  return ownerIfForeign(pid, requester);
}

/**
 * Refusals that need no attach: run before anything is written into the target. `requester` is
 * whom we act for: a helper running as root for a user passes that user, so root's power is not
 * lent to load code into someone else's JVM; the CLI passes its own euid (root under sudo: allowed).
 */
export function checkAgentTarget(pid: number, requester: AgentRequester = { uid: process.geteuid?.() ?? 0 }): { uid: number; gid: number } {
  let cmdline: string[];
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    throw new StudioError('input', `no process with pid ${pid} is running`);
  }
  if (cmdline.includes('-XX:+DisableAttachMechanism')) throw unsuitableError(`pid ${pid} runs with -XX:+DisableAttachMechanism, so no agent can be loaded into it: remove that flag, or use --java perfmap (with -XX:+PreserveFramePointer)`);
  if (cmdline.includes('-XX:-EnableDynamicAgentLoading')) throw unsuitableError(dynamicLoadingOffMessage(pid));
  const ids = effectiveIds(pid);
  const me = requester.uid;
  if (ownerIfForeign(pid, requester) !== undefined) {
    const who = requester.source && requester.source !== 'self' ? `uid ${me}, from ${requester.source}` : `uid ${me}`;
    throw unsuitableError(
      `pid ${pid} is a JVM of uid ${ids.uid}, not yours (${who}): loading the Java agent into another user's JVM needs root. Profile it as root (sudo) or as uid ${ids.uid}, or profile your own JVM`,
    );
  }
  checkJvmHasAgct(pid);
  if (tmpIsNoexec(pid)) throw unsuitableError(noexecMessage(pid));
  return ids;
}

function noexecMessage(pid: number): string {
  return `pid ${pid}'s /tmp is mounted noexec, so the JVM cannot load the Java agent from there: give its /tmp exec (e.g. docker run --tmpfs /tmp:exec), or use --java perfmap (with -XX:+PreserveFramePointer)`;
}

/** Whether the mount holding /tmp in the JVM's mount namespace has the noexec flag (/proc/PID/mountinfo). */
export function tmpIsNoexec(pid: number, mountinfo?: string): boolean {
  const text = mountinfo ?? readMountinfo(pid);
  if (text === undefined) return false; // cannot tell: the JVM's own reply says so later
  return mountAt('/tmp', text)?.options.includes('noexec') ?? false;
}

/** The JVM's libjvm.so as mapped ("/usr/lib/jvm/.../libjvm.so") and a path that opens it from here (through /proc/PID/root: containers). */
export function jvmLibrary(pid: number): { mapped: string; open: string[] } | undefined {
  let maps: Mapping[];
  try {
    maps = readMaps(pid);
  } catch {
    return undefined;
  }
  const lib = maps.find((m) => m.path.startsWith('/') && /\/libjvm\.so$/.test(m.path));
  if (!lib) return undefined;
  // /proc/PID/root reaches the JVM's mount namespace; map_files reaches the very inode it mapped
  // (a JDK upgraded under a running JVM leaves a deleted file).
  const byRange = `/proc/${pid}/map_files/${lib.start.toString(16)}-${lib.end.toString(16)}`;
  return { mapped: lib.path, open: lib.deleted ? [byRange, `/proc/${pid}/root${lib.path}`] : [`/proc/${pid}/root${lib.path}`, byRange] };
}

export function noAgctMessage(what: string): string {
  return `${what} does not export AsyncGetCallTrace, which the Java agent needs to walk Java stacks (not a HotSpot JDK, or a build without it): use --java perfmap with the JVM started with -XX:+PreserveFramePointer`;
}

/**
 * Refuses (exit 4) a library that positively lacks an exported AsyncGetCallTrace. Returns false
 * when that cannot be told (unreadable, no .dynsym): the agent's own code 100 is then the check.
 */
export function checkAgctLibrary(file: string, shownAs = file): boolean {
  let exported: boolean | undefined;
  try {
    exported = withElf(file, (elf) => elf.exportsDynamic('AsyncGetCallTrace'));
  } catch {
    return false;
  }
  if (exported === false) throw unsuitableError(noAgctMessage(shownAs));
  return exported === true;
}

/** The target's libjvm, read through /proc/PID/root, must export AsyncGetCallTrace. */
export function checkJvmHasAgct(pid: number): boolean {
  const lib = jvmLibrary(pid);
  if (!lib) return false;
  for (const file of lib.open) {
    try {
      fs.accessSync(file, fs.constants.R_OK);
    } catch {
      continue;
    }
    return checkAgctLibrary(file, `pid ${pid}'s JVM library ${lib.mapped}`);
  }
  return false;
}

/**
 * Copies the agent into the JVM's /tmp unless an identical copy is there; returns its path as the
 * JVM sees it. Done as the JVM's owner inside the JVM's root (extension/sys/asUser.ts): the copy is
 * created exclusively under a fresh name and renamed into place, and an existing file is looked at
 * through an fd opened without following links, so neither a /tmp that leads back to the host nor
 * a link planted under either name lets root create or read a file outside the JVM's reach.
 */
export function placeAgent(pid: number, lib: string, ids: { uid: number; gid: number }): string {
  const bytes = fs.readFileSync(lib);
  const hash = contentTag(bytes);
  const owner: FileOwner = { uid: ids.uid, gid: ids.gid, pid };
  // A shared /tmp may already hold another user's copy (or a planted file) under the common name:
  // then the JVM owner's own name (the hash followed by the uid in 8 hex digits).
  const names = [`/tmp/ebpf-studio-jvmagent-${hash}.so`, `/tmp/ebpf-studio-jvmagent-${hash}${ids.uid.toString(16).padStart(8, '0')}.so`];
  const refused: string[] = [];
  for (const name of names) {
    const why = placeCopy(owner, name, bytes);
    if (why === undefined) return name;
    refused.push(why);
  }
  throw unsuitableError(`cannot place the Java agent in pid ${pid}'s /tmp: ${refused.join('; ')}: remove them and retry`);
}

function dynamicLoadingOffMessage(pid: number): string {
  return `pid ${pid} runs with -XX:-EnableDynamicAgentLoading (JDK 21+), so no agent can be loaded into it: start it with -XX:+EnableDynamicAgentLoading, or use --java perfmap (with -XX:+PreserveFramePointer)`;
}

/** Sends one command to the agent (`load <lib> true <options>`); returns Agent_OnAttach's code. */
export async function agentCommand(pid: number, libInTarget: string, options: string, timeoutMs: number): Promise<number> {
  let out: string;
  try {
    out = await attachCommand(pid, 'load', [libInTarget, 'true', options], { timeoutMs });
  } catch (e) {
    // HotSpot's refusal spans lines ("... was not loaded.\n<dlerror>"): one line, and the cause when known.
    if (!(e instanceof StudioError)) throw e;
    if (/failed to map segment/.test(e.message)) throw unsuitableError(noexecMessage(pid));
    throw new StudioError(e.kind, e.message.trim().replace(/\s*\n\s*/g, ' '), e.detail);
  }
  // JDK 9+ prints "return code: N"; JDK 8 printed the bare number.
  // JDK 21+ with -XX:-EnableDynamicAgentLoading (also when set through JAVA_TOOL_OPTIONS or a
  // flags file, which the command-line check cannot see) answers with status 0 and this text.
  if (/Dynamic agent loading is not enabled/.test(out)) throw unsuitableError(dynamicLoadingOffMessage(pid));
  const m = /return code:\s*(-?\d+)/.exec(out) ?? /^\s*(-?\d+)\s*$/m.exec(out);
  if (!m) throw new StudioError('internal', `the JVM (pid ${pid}) answered the agent load without a return code: ${JSON.stringify(out.slice(0, 200))}`);
  return Number(m[1]);
}

/**
 * The native half of one BPF sample of the JVM. Frame-pointer mode: ids into the stacks map (the
 * java_samples ring of bpf/profile.bpf.c). CFI mode: the user stack unwound in user space from the
 * sample's stack copy (./profileDwarf.ts), and the kernel stack's id.
 */
export type JavaNative = { userStackId: number; kernStackId: number } | { user: BigUint64Array; kernStackId: number; note?: string; comm: string };

interface JoinSample extends TimedSample {
  native: JavaNative;
  /** identifies the native stack (same key, same frames) */
  key: string;
  /** off-CPU join: the interval's time (µs) and why the thread was off CPU; CPU samples weigh 1 */
  weightUs?: number;
  state?: ThreadState;
  /** intervals this sample stands for (CPU samples: 1) */
  count?: number;
}

/** Decided samples with the same thread, native stack and agent record, counted once. */
interface Joined {
  tid: number;
  native: JavaNative;
  nativeKey: string;
  record: AgentRecord | undefined;
  /** the Java frames' classes (./javaFrameTypes.ts), decided with the code cache known at the join */
  classes?: FrameClass[];
  count: number;
  /** the summed weight: samples, or off-CPU µs */
  value: number;
  state?: ThreadState;
}

/** How far the ring's samples may be out of time order (a program stamps, then copies and submits). */
const SAMPLE_SKEW_NS = 20_000_000n;
/** Margin under the agent's T watermark (clock reads vs the handler-count check in agent.c). */
const RECORD_SKEW_NS = 2_000_000n;

export interface JavaAgentSession {
  /** the JVM owner's effective uid: the BPF programs signal no thread acting as anyone else */
  readonly euid: number;
  /** ms from the attach request to the agent's first Java sample (undefined until one came) */
  readonly firstSampleMs: number | undefined;
  /** frame-pointer mode: starts collecting the BPF join records; call right after the BPF object is loaded */
  attachRing(obj: BpfObject): void;
  /**
   * Off-CPU join: an interval a thread of the JVM spent off CPU, sent when the thread returned to
   * user space and was signalled there (bpf/offcpu.bpf.c java_join); it joins the agent's record
   * of that signal like a CPU sample, weighing its µs.
   */
  addOffcpuSample(tid: number, nsTid: number, ktimeNs: bigint, native: { userStackId: number; kernStackId: number }, weightUs: number, state: ThreadState, count: number): void;
  /** CFI mode: one sample of the JVM, its user stack already unwound (ts = bpf_ktime_get_ns) */
  addCfiSample(tid: number, nsTid: number, ktimeNs: bigint, native: Extract<JavaNative, { user: BigUint64Array }>): void;
  /** live counters: BPF samples and agent records seen, samples joined, samples still waiting for their record */
  counts(): { bpf: number; agent: number; joined: number; pending: number };
  /**
   * While sampling: reads what the agent wrote since the last call, decides every sample whose
   * record can no longer change, and replaces the target's stacks in `result` with the joined
   * stacks so far. Samples whose record may still come are left out until a later call (never
   * shown unjoined, never counted twice).
   */
  live(result: ProfileResult, raw: RawStack[], assemble: (raws: RawStack[]) => ProfileResult['stacks']): ProfileResult;
  /**
   * Stops the agent (after the BPF program is gone), reads the rest of its file, and replaces the
   * target's stacks in `result` with joined kernel → native → Java stacks.
   */
  finish(result: ProfileResult, raw: RawStack[], assemble: (raws: RawStack[]) => ProfileResult['stacks']): Promise<ProfileResult>;
  /** best effort stop without a result (start failed half-way) */
  abort(): Promise<void>;
}

/**
 * Keeps only some samples (the latency tracer's slow-call windows): each paired sample waits until
 * the horizon passes its time (every window that could hold it is known then; undefined: all are),
 * then is kept or let go. The target's stacks not joined by the agent are left out of the result.
 */
export interface SampleFilter {
  horizonNs(): bigint | undefined;
  keep(nsTid: number, tid: number, ktimeNs: bigint): boolean;
  /** samples let go unseen: more were waiting than HELD_MAX */
  lost(n: number): void;
}

/** Paired samples waiting for a SampleFilter's horizon: beyond this, the newest are let go (counted). */
const HELD_MAX = 100_000;
/** SampleFilter: a sample without a Java stack takes its thread's next one at most this much later. */
const BORROW_NS = 100_000_000n;

export interface JavaAgentOptions {
  depth?: number;
  keep?: SampleFilter;
  unwind?: 'fp' | 'dwarf';
  /** the joined stacks are added to the target's stacks in the result (off-CPU: those are the intervals not joined) instead of replacing them */
  keepStacks?: boolean;
}

type Assemble = (raws: RawStack[]) => ProfileResult['stacks'];

export async function startJavaAgent(pid: number, env: TracerEnv, opts: JavaAgentOptions = {}): Promise<JavaAgentSession> {
  const session = new AgentSession(pid, env, opts);
  await session.attach();
  session.collect();
  return session;
}

/** One profile's use of the agent in one JVM: its file, the pairer and the samples joined so far. */
class AgentSession implements JavaAgentSession {
  private readonly cfi: boolean;
  private target!: ProcessIdentity;
  private ids!: { uid: number; gid: number };
  private libInTarget!: string;
  private outInTarget!: string;
  private outHost!: string;
  private owner!: FileOwner;
  private outFd?: number;
  private t0 = 0;
  private t0ns = 0n;
  private readonly pairer = new IncrementalPairer<JoinSample>();
  private readonly joined = new Map<string, Joined>();
  private held: { sample: JoinSample; record: AgentRecord | undefined; classes: FrameClass[] | undefined }[] = [];
  /** SampleFilter: per thread, the samples without a Java stack waiting for its next one */
  private readonly orphans = new Map<number, JoinSample[]>();
  private orphanCount = 0;
  private ring?: RingBufferHandle;
  private stopped = false;
  private firstMs?: number;
  private firstJavaTs?: bigint;
  private latestSampleTs?: bigint;
  private readonly n = { bpf: 0, agent: 0, joined: 0 };
  private readonly log: AgentLog = emptyAgentLog();
  private readonly cache = new CodeCache(this.log.methods);
  private readOffset = 0;
  private tail = '';
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly pid: number,
    private readonly env: TracerEnv,
    private readonly opts: JavaAgentOptions,
  ) {
    this.cfi = opts.unwind === 'dwarf';
  }

  get euid(): number {
    return this.ids.uid;
  }

  get firstSampleMs(): number | undefined {
    return this.firstMs;
  }

  /** Checks the target, places the agent in its /tmp, starts it, and asks for the code list. */
  async attach(): Promise<void> {
    const { pid, env } = this;
    this.place();
    this.t0 = Date.now();
    this.t0ns = process.hrtime.bigint(); // CLOCK_MONOTONIC, the clock of the agent's timestamps
    const code = await agentCommand(pid, this.libInTarget, `start,out=${this.outInTarget},depth=${this.opts.depth ?? 128}`, 15000);
    if (code !== 0) throw unsuitableError(`pid ${pid}: the Java agent did not start: ${AGENT_CODES[code] ?? `Agent_OnAttach returned ${code}`}`);
    env.log(`profile: Java agent started in pid ${pid} (${this.libInTarget}), writing ${this.outInTarget}`);
    await this.askCodelist('at the start');
  }

  /** The refusals, then the agent's copy in the JVM's /tmp and the name of its output file. */
  private place(): void {
    const { pid, env } = this;
    const lib = agentLibrary(env.assetDir);
    if (!lib) throw unsuitableError(agentUnavailableMessage(env.assetDir));
    // By start time too: the stop and the last jcmd go to this JVM or to none (its pid may be another's by then)
    const target = identify(pid);
    if (!target) throw new StudioError('input', `no process with pid ${pid} is running`);
    this.target = target;
    const ids = (this.ids = checkAgentTarget(pid, env.requester));
    const nspid = namespacePid(pid);
    this.libInTarget = placeAgent(pid, lib, ids);
    const outName = `.ebpf-studio-jvm-${nspid}-${crypto.randomBytes(4).toString('hex')}.txt`;
    this.outInTarget = `/tmp/${outName}`;
    this.outHost = `/proc/${pid}/root/tmp/${outName}`;
    this.owner = { uid: ids.uid, gid: ids.gid, pid };
  }

  /** Polls the agent's file every 500 ms, and once now. */
  collect(): void {
    this.timer = setInterval(() => this.poll(), 500);
    this.timer.unref?.();
    this.poll(); // opens the file now and holds the reader's lock the agent watches
  }

  // Closes the agent's file and removes it by name, as the JVM's owner inside its root.
  private removeOut(): void {
    if (this.outFd !== undefined) fs.closeSync(this.outFd);
    this.outFd = undefined;
    try {
      unlinkAs(this.owner, this.outInTarget);
    } catch {
      /* not created, or gone with the JVM */
    }
  }

  // C1 or C2 per nmethod (./javaFrameTypes.ts says why from Compiler.codelist): asked now for the
  // live view, and again at the end for code compiled meanwhile. Without it: 'compiled', tier unknown.
  private async askCodelist(when: string): Promise<void> {
    const { pid } = this;
    if (!sameProcess(this.target)) return;
    try {
      this.cache.addCodelist(parseCodelist(await jcmd(pid, 'Compiler.codelist', { timeoutMs: 15000 })));
    } catch (e) {
      this.env.log(`profile: Compiler.codelist ${when} failed in pid ${pid} (${(e as Error).message}): Java frames show compiled without C1/C2`);
    }
  }

  private addSample(s: JoinSample): void {
    this.n.bpf++;
    if (this.latestSampleTs === undefined || s.ktimeNs > this.latestSampleTs) this.latestSampleTs = s.ktimeNs;
    this.pairer.addSample(s);
  }

  // The agent's file, opened once, as the JVM's owner inside its root, never through a link.
  private openOut(): number | undefined {
    if (this.outFd !== undefined) return this.outFd;
    try {
      const fd = openAs(this.owner, this.outInTarget, fs.constants.O_RDONLY);
      if (!fs.fstatSync(fd).isFile()) {
        fs.closeSync(fd);
        return undefined;
      }
      this.outFd = fd;
      holdReaderLock(this.env.addon, fd, this.env.log, 'profile');
    } catch {
      return undefined;
    }
    return this.outFd;
  }

  // Reads what the agent appended since the last call (the file only grows until stop); complete
  // lines only, the rest waits in `tail`. Records go to the pairer as they are parsed.
  private readMore(): void {
    const fd = this.openOut();
    if (fd === undefined) return;
    const { log, env } = this;
    const buf = Buffer.alloc(1 << 20);
    for (;;) {
      const got = fs.readSync(fd, buf, 0, buf.length, this.readOffset);
      if (got <= 0) break;
      this.readOffset += got;
      const text = buf.subarray(0, got).toString('utf8');
      noteAgentLimit(text, env.log, 'profile');
      this.tail = parseAgentText(this.tail + text, log);
      this.cache.take(log.code); // before the records: the agent writes a sample's code events first
      for (const r of log.records) {
        this.pairer.addRecord(r);
        if (r.code > 0 && (this.firstJavaTs === undefined || r.tsNs < this.firstJavaTs)) this.firstJavaTs = r.tsNs;
      }
      this.n.agent += log.records.length;
      log.records.length = 0;
    }
    if (this.firstMs === undefined && this.firstJavaTs !== undefined) this.firstMs = Date.now() - this.t0;
  }

  // Decides what the watermarks allow and counts the decided samples by (thread, native stack,
  // record): memory grows with distinct stacks, not with samples.
  private advance(all: boolean): void {
    const { log, cache } = this;
    const samplesBefore = all ? ALL_IN : this.latestSampleTs === undefined ? 0n : this.latestSampleTs - SAMPLE_SKEW_NS;
    const recordsBefore = all || log.ended ? ALL_IN : log.watermarkNs === undefined ? 0n : log.watermarkNs - RECORD_SKEW_NS;
    for (const { sample, record } of this.pairer.advance(samplesBefore, recordsBefore)) {
      if (record) this.n.joined++;
      if (record) restoreRecoveredLeaf(record, cache);
      const classes = record && record.code > 0 ? frameClasses(record, log.methods, cache) : undefined;
      if (this.opts.keep) this.holdJoined(sample, record, classes);
      else this.fold(sample, record, classes);
    }
    if (!this.opts.keep) return;
    if (all) for (const list of this.orphans.values()) for (const o of list) this.hold(o, undefined, undefined);
    if (all) this.orphans.clear();
    this.release(all);
  }

  /**
   * SampleFilter mode: a sample without a Java stack of its own (an interval the thread was not
   * signalled for: preempted, a page fault; or a signal lost) takes the thread's next one, where
   * the thread ran on from, if that comes within BORROW_NS.
   */
  private holdJoined(sample: JoinSample, record: AgentRecord | undefined, classes: FrameClass[] | undefined): void {
    const tid = sample.nsTid || sample.tid;
    const waiting = this.orphans.get(tid);
    if (!record) {
      if (this.orphanCount >= HELD_MAX) return this.hold(sample, undefined, undefined);
      if (waiting) waiting.push(sample);
      else this.orphans.set(tid, [sample]);
      this.orphanCount++;
      return;
    }
    if (waiting) {
      for (const o of waiting) this.hold(o, record.tsNs - o.ktimeNs <= BORROW_NS ? record : undefined, record.tsNs - o.ktimeNs <= BORROW_NS ? classes : undefined);
      this.orphanCount -= waiting.length;
      this.orphans.delete(tid);
    }
    this.hold(sample, record, classes);
  }

  private hold(sample: JoinSample, record: AgentRecord | undefined, classes: FrameClass[] | undefined): void {
    if (this.held.length < HELD_MAX) this.held.push({ sample, record, classes });
    else this.opts.keep!.lost(1);
  }

  /** The held samples the filter's horizon has passed: kept ones folded in, the rest let go. */
  private release(all: boolean): void {
    const keep = this.opts.keep!;
    const h = all ? undefined : keep.horizonNs();
    const wait: typeof this.held = [];
    for (const x of this.held) {
      if (h !== undefined && x.sample.ktimeNs >= h) wait.push(x);
      else if (keep.keep(x.sample.nsTid ?? 0, x.sample.tid, x.sample.ktimeNs)) this.fold(x.sample, x.record, x.classes);
    }
    this.held = wait;
  }

  /** Counts one decided sample by (thread, native stack, record, state). */
  private fold(sample: JoinSample, record: AgentRecord | undefined, classes: FrameClass[] | undefined): void {
    const recordKey = record ? `${record.code}:${record.frames.map((f) => `${f.method}.${f.bci}.${f.line}`).join(',')}:${classes ? classesKey(classes) : ''}` : '-';
    const key = `${sample.tid}/${sample.key}/${recordKey}/${sample.state ?? ''}`;
    const j = this.joined.get(key);
    const count = sample.count ?? 1;
    const value = sample.weightUs ?? count;
    if (j) {
      j.count += count;
      j.value += value;
    } else this.joined.set(key, { tid: sample.tid, native: sample.native, nativeKey: sample.key, record, classes, count, value, ...(sample.state ? { state: sample.state } : {}) });
  }

  private readLogged(step: () => void): void {
    try {
      step();
    } catch (e) {
      this.env.log(`profile: reading the Java agent's file ${this.outHost} failed: ${(e as Error).message}`);
    }
  }

  private poll(): void {
    this.readLogged(() => {
      this.readMore();
      this.advance(false);
    });
  }

  // The target's stacks in `result` replaced by the joined ones decided so far.
  private render(result: ProfileResult, raw: RawStack[], assemble: Assemble): ProfileResult {
    const { pid, log, cache } = this;
    if (!this.n.bpf) return result;
    const stackOf = new Map<number, BigUint64Array>();
    const commOf = new Map<number, string>();
    for (const r of raw) {
      if (r.entry.pid !== pid) continue;
      // fp: user and kernel stacks share one id space (the stacks map); cfi: raw user stacks have no id
      if (!this.cfi) stackOf.set(r.entry.userStackId, r.user);
      stackOf.set(r.entry.kernStackId, r.kernel);
      commOf.set(r.entry.tid, r.entry.comm);
    }
    const framesCache = new Map<string, ProfileFrame[]>();
    const items = [...this.joined.values()].map((j) => {
      const comm = 'comm' in j.native ? j.native.comm : (commOf.get(j.tid) ?? '');
      const cacheKey = `${j.tid}/${j.nativeKey}`;
      let frames = framesCache.get(cacheKey);
      if (!frames) {
        frames = assemble([this.rawStackOf(j, comm, stackOf)])[0]?.frames ?? [];
        framesCache.set(cacheKey, frames);
      }
      return { pid, tid: j.tid, comm, frames: joinStack(frames, j.record, log.methods, j.classes && typesOf(j.classes, cache)), count: j.count, value: j.value, ...(j.state ? { state: j.state } : {}) };
    });
    const others = this.opts.keep ? [] : this.opts.keepStacks ? result.stacks : result.stacks.filter((s) => s.pid !== pid);
    return { ...result, stacks: [...others, ...foldStacks(items)].sort((a, b) => (b.value ?? b.count) - (a.value ?? a.count)) };
  }

  /** The native half of a joined sample as a raw stack for `assemble`. */
  private rawStackOf(j: Joined, comm: string, stackOf: Map<number, BigUint64Array>): RawStack {
    const { pid } = this;
    const empty = new BigUint64Array(0);
    const nat = j.native;
    return 'user' in nat
      ? { entry: { pid, tid: j.tid, comm, userStackId: nat.user.length ? 0 : -14, kernStackId: nat.kernStackId, count: 1 }, user: nat.user, kernel: stackOf.get(nat.kernStackId) ?? empty, note: nat.note }
      : { entry: { pid, tid: j.tid, comm, userStackId: nat.userStackId, kernStackId: nat.kernStackId, count: 1 }, user: stackOf.get(nat.userStackId) ?? empty, kernel: stackOf.get(nat.kernStackId) ?? empty };
  }

  private async stopAgent(): Promise<void> {
    const { pid, env } = this;
    if (this.stopped) return;
    this.stopped = true;
    if (!sameProcess(this.target)) return;
    try {
      const c = await agentCommand(pid, this.libInTarget, 'stop', 15000);
      if (c !== 0) env.log(`profile: the Java agent's stop returned ${c}`);
    } catch (e) {
      env.log(`profile: stopping the Java agent in pid ${pid} failed: ${(e as Error).message}`);
    }
  }

  attachRing(obj: BpfObject): void {
    this.ring = obj.openRingBuffer('java_samples', (batch, offsets) => {
      for (let i = 0; i + 1 < offsets.length; i++) {
        const s = decodeJavaSample(batch.subarray(offsets[i], offsets[i + 1]));
        this.addSample({ tid: s.tid, nsTid: s.nsTid, ktimeNs: s.ktimeNs, native: { userStackId: s.userStackId, kernStackId: s.kernStackId }, key: `${s.userStackId}/${s.kernStackId}` });
      }
    });
  }

  addOffcpuSample(tid: number, nsTid: number, ktimeNs: bigint, native: { userStackId: number; kernStackId: number }, weightUs: number, state: ThreadState, count: number): void {
    this.addSample({ tid, nsTid, ktimeNs, native, key: `${native.userStackId}/${native.kernStackId}`, weightUs, state, count });
  }

  addCfiSample(tid: number, nsTid: number, ktimeNs: bigint, native: Extract<JavaNative, { user: BigUint64Array }>): void {
    this.addSample({ tid, nsTid, ktimeNs, native, key: `${native.kernStackId}/${native.user.join(',')}/${native.note ?? ''}` });
  }

  counts(): { bpf: number; agent: number; joined: number; pending: number } {
    const { n } = this;
    return { bpf: n.bpf, agent: n.agent, joined: n.joined, pending: this.pairer.pending };
  }

  live(result: ProfileResult, raw: RawStack[], assemble: Assemble): ProfileResult {
    this.poll();
    return this.render(result, raw, assemble);
  }

  async abort(): Promise<void> {
    clearInterval(this.timer);
    this.ring?.close();
    await this.stopAgent();
    this.removeOut();
  }

  async finish(result: ProfileResult, raw: RawStack[], assemble: Assemble): Promise<ProfileResult> {
    const { log, env, n } = this;
    clearInterval(this.timer);
    await this.askCodelist('at the end'); // before the stop, while the code the profile ran in is listed
    await this.stopAgent();
    this.readLogged(() => this.readMore());
    this.removeOut();
    if (!log.ended) env.log(`profile: the Java agent's file ended without its end mark; some Java samples may be missing`);
    if (log.dropped) env.log(`profile: the Java agent's buffer was full ${log.dropped} times`);
    this.advance(true);
    if (this.firstJavaTs !== undefined) env.log(`profile: Java agent: first Java sample ${Number((this.firstJavaTs - this.t0ns) / 1000n) / 1000} ms after the attach request`);
    env.log(`profile: Java agent: ${n.bpf} BPF samples, ${n.agent} agent records, ${n.joined} joined`);
    if (log.signals) env.log(`profile: Java agent: ${log.signals} signals handled in the JVM, ${(log.handlerNs / log.signals / 1000).toFixed(1)} µs each (the AsyncGetCallTrace walk included)`);
    this.logFrameTypes();
    return this.render(result, raw, assemble);
  }

  /** How many Java frames of the joined samples were interpreted, C1, C2, inlined... */
  private logFrameTypes(): void {
    const { log, cache } = this;
    const tally: Record<string, number> = {};
    for (const j of this.joined.values()) {
      if (!j.record || !j.classes) continue;
      const types = typesOf(j.classes, cache);
      j.record.frames.forEach((f, i) => {
        if (log.methods.get(f.method)?.native) return; // JNI methods are native frames, not typed Java
        const k = types[i] ?? 'unknown';
        tally[k] = (tally[k] ?? 0) + j.count;
      });
    }
    this.env.log(`profile: Java agent: ${cache.nmethods.length} nmethods; Java frame types: ${Object.entries(tally).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`);
  }
}
