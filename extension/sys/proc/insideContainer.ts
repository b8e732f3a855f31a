// Whether this process (the CLI, the helper, the editor's extension host) itself runs inside a
// container, and what that takes away. A Dev Container is the common case: VS Code's extension host
// runs in it, and what BPF can do there depends on how the container was started:
//   default (no --privileged): the runtime withholds CAP_BPF/CAP_SYS_ADMIN and its seccomp profile
//     blocks bpf(), so every load is refused even for uid 0;
//   --privileged --pid=host: everything works, pids are the host's;
//   --privileged in its own pid namespace: BPF loads, but bpf_get_current_pid_tgid() reports pids of
//     the host's namespace while /proc here numbers them the container's way, and the host pid of a
//     process cannot be learned from inside (its NSpid line starts at this namespace). A filter on a
//     pid typed here would never match, so tracing by pid is refused with the reason.
import fs from 'node:fs';
import { setPrivilegeHint } from '../../protocol/errors';

export interface InsideContainer {
  /** podman, docker, or "a container" when only the cgroup path says so */
  runtime: string;
  /** false: the container shares the host's pid namespace (--pid=host) */
  ownPidNamespace: boolean;
  /** CAP_BPF or CAP_SYS_ADMIN is effective (the container was started --privileged or with --cap-add) */
  privileged: boolean;
}

function read(p: string): string | undefined {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
}

function runtimeHere(): string | undefined {
  if (fs.existsSync('/run/.containerenv')) return 'podman';
  if (fs.existsSync('/.dockerenv')) return 'docker';
  const env = process.env.container;
  if (env && /^[\w.-]{1,32}$/.test(env)) return env;
  // With --pid=host /proc/1 is the host's init: our own cgroup is what tells.
  const cg = read('/proc/self/cgroup') ?? '';
  if (/\/(docker|libpod|kubepods|cri-containerd|crio)[-/]/.test(cg)) return 'a container';
  return undefined;
}

/**
 * True when this process's pid namespace is not the host's. Kernel threads are children of
 * kthreadd (pid 2, parent 0) and are visible only in the initial pid namespace.
 */
export function inOwnPidNamespace(): boolean {
  const s = read('/proc/2/status');
  return !(s && /^Name:\s+kthreadd$/m.test(s) && /^PPid:\s+0$/m.test(s));
}

function effectiveBpfCapable(): boolean {
  const m = /^CapEff:\s+([0-9a-f]+)/m.exec(read('/proc/self/status') ?? '');
  if (!m) return false;
  const mask = BigInt('0x' + m[1]);
  return (mask & (1n << 39n)) !== 0n || (mask & (1n << 21n)) !== 0n;
}

let cached: InsideContainer | null | undefined;

/** What the container this process runs in allows, or undefined on the host. */
export function insideContainer(): InsideContainer | undefined {
  if (cached === undefined) {
    const runtime = runtimeHere();
    cached = runtime ? { runtime, ownPidNamespace: inOwnPidNamespace(), privileged: effectiveBpfCapable() } : null;
  }
  return cached ?? undefined;
}

const RECIPE = 'start the Dev Container with "runArgs": ["--privileged", "--pid=host"] in devcontainer.json (docs/editor.md, "In a Dev Container"), or use the extension on the host';

/** One sentence per limit of this container, each naming the cause and the fix; empty on the host. */
export function containerLimits(c = insideContainer()): string[] {
  if (!c) return [];
  const out: string[] = [];
  const where = c.runtime === 'a container' ? 'inside a container' : `inside a ${c.runtime} container`;
  if (!c.privileged) out.push(`${where} without privileges: the container refuses BPF even to root (no CAP_BPF or CAP_SYS_ADMIN, and its seccomp profile blocks bpf()); ${RECIPE}`);
  if (c.ownPidNamespace) out.push(`${where} with its own pid namespace: the host's processes are not visible, and BPF reports host pids while the pids shown here are the container's, so tracing by --pid is refused; whole-system profiles name kernel frames only (the host's processes are not in this /proc). ${RECIPE.replace(/^start/, 'Start')}`);
  return out;
}

/** Refuses a pid typed in a pid namespace BPF does not number by, with the reason. */
export function pidNamespaceRefusal(pid: number): string | undefined {
  const c = insideContainer();
  const own = c ? c.ownPidNamespace : inOwnPidNamespace();
  if (!own) return undefined;
  const where = c ? (c.runtime === 'a container' ? 'this container' : `this ${c.runtime} container`) : 'this process';
  return `pid ${pid} is numbered in ${where}'s own pid namespace, but BPF sees the host's pids (bpf_get_current_pid_tgid), and the host pid cannot be read from in here: a trace filtered by it would see nothing. ${RECIPE.replace(/^start/, 'Start')}`;
}

// Privilege failures raised anywhere below say why a container refuses, not "run with sudo".
const limits = containerLimits();
if (limits.length && !insideContainer()!.privileged) setPrivilegeHint(limits[0]);
