// Which processes a process picker shows first, and what a typed pid means, without VS Code.
// Order: the JVMs, then the user's own programs (those run from the workspace first), then other
// users' processes; the machine's own processes — init and system daemons, sandbox plumbing
// (process_api, memfd:sealed), browser and editor helpers (chromium crashpad, --type=renderer…),
// this extension's helper and the editor itself — go behind "Show all". Newest first within a group.
import type { ProcessInfo } from '../protocol/protocol';
import { PID_MAX } from '../protocol/validate';

export type ProcessGroup = 'jvm' | 'workspace' | 'own' | 'others' | 'system';

export interface PickContext {
  /** the editor user's uid */
  uid: number;
  /** workspace folders: programs run from there come first */
  roots: string[];
  /** the editor's own processes (the extension host and its ancestors) */
  selfPids: number[];
}

/** Daemons and plumbing no one means to trace from the editor; matched on comm or argv[0]'s base name. */
const SYSTEM_NAMES =
  /^(init|systemd(-.*)?|\(sd-pam\)|dbus-(daemon|broker|launch)|sshd(-session)?|cron|crond|atd|agetty|login|rsyslogd|syslogd|containerd(-shim.*)?|dockerd|docker-proxy|polkitd|snapd|accounts-daemon|NetworkManager|wpa_supplicant|avahi-daemon|ModemManager|upowerd|udisksd|gvfs.*|at-spi.*|xdg-.*|pipewire.*|wireplumber|pulseaudio|gnome-keyring-d.*|dconf-service|tini|dumb-init|process_api|chrome_crashpad.*|crashpad_handler|ebpf-studio-la.*|kworker.*)$/;

const base = (s: string) => s.slice(s.lastIndexOf('/') + 1);

/** A process of the machine, the sandbox, the browser or the editor rather than of the user's work. */
export function isSystemProcess(p: ProcessInfo, ctx: Pick<PickContext, 'selfPids'>): boolean {
  if (p.kernelThread || p.pid === 1 || ctx.selfPids.includes(p.pid)) return true;
  const argv0 = base(p.cmdline[0] ?? '');
  if (p.comm.startsWith('memfd:') || argv0.startsWith('memfd:')) return true;
  if (SYSTEM_NAMES.test(p.comm) || SYSTEM_NAMES.test(argv0)) return true;
  const line = p.cmdline.join(' ');
  // Chromium and Electron helpers (renderers, GPU, zygote, crash handler) carry --type=
  if (/(^|\s)--type=\S+/.test(line) || /crashpad/i.test(line)) return true;
  // the editor's server and this extension's privileged helper
  if (/\bcode-server\b|\/vscode-server\/|\/\.vscode-server\//.test(line)) return true;
  if (/\/helper\.js(\s|$)/.test(line) && /ebpf[-_]?studio/i.test(line)) return true;
  return false;
}

function inside(file: string | undefined, roots: string[]): boolean {
  return Boolean(file) && roots.some((r) => file === r || file!.startsWith(r.endsWith('/') ? r : r + '/'));
}

export function groupOf(p: ProcessInfo, ctx: PickContext): ProcessGroup {
  if (isSystemProcess(p, ctx)) return 'system';
  if (p.jvm) return 'jvm';
  // a program built in the workspace is what the user came for, whoever runs it (sudo, a container)
  if (inside(p.exe, ctx.roots) || inside(p.cmdline[0], ctx.roots)) return 'workspace';
  return p.uid === ctx.uid ? 'own' : 'others';
}

const ORDER: ProcessGroup[] = ['jvm', 'workspace', 'own', 'others', 'system'];

export const GROUP_TITLES: Record<ProcessGroup, string> = {
  jvm: 'JVMs',
  workspace: 'Programs from this workspace',
  own: 'Your processes',
  others: 'Other users’ processes',
  system: 'System and helper processes',
};

/** The processes in picker order with their groups. Kernel threads are left out (nothing to trace in user space). */
export function orderProcesses(procs: ProcessInfo[], ctx: PickContext): { process: ProcessInfo; group: ProcessGroup }[] {
  return procs
    .filter((p) => !p.kernelThread)
    .map((process) => ({ process, group: groupOf(process, ctx) }))
    .sort((a, b) => ORDER.indexOf(a.group) - ORDER.indexOf(b.group) || b.process.pid - a.process.pid);
}

/** A pid typed into the picker's filter or its input box: "1234" (spaces allowed), else undefined. */
export function typedPid(text: string): number | undefined {
  const m = /^\s*(\d{1,10})\s*$/.exec(text);
  return m ? Number(m[1]) : undefined;
}

export type PidCheck = { ok: true; pid: number; process: ProcessInfo } | { ok: false; message: string };

/**
 * What a typed pid means against a fresh listing: the process, or a message that says why not
 * and what to do. `needs`: what the command needs ("a JVM") when only JVMs qualify.
 */
export function checkTypedPid(text: string, procs: ProcessInfo[], opts: { jvmOnly?: boolean; command: string } = { command: 'this command' }): PidCheck {
  const pid = typedPid(text);
  if (pid === undefined || pid < 1 || pid > PID_MAX) return { ok: false, message: `"${text.trim()}" is not a pid: a pid is a whole number from 1 to ${PID_MAX}.` };
  const p = procs.find((x) => x.pid === pid);
  if (!p) return { ok: false, message: `No process with pid ${pid} is running: it has exited, or the pid is mistyped (check with: ps -p ${pid}). Start the program again and pick it from the list.` };
  if (p.kernelThread) return { ok: false, message: `pid ${pid} (${p.comm}) is a kernel thread: it has no user-space code for ${opts.command} to trace.` };
  if (opts.jvmOnly && !p.jvm) return { ok: false, message: `pid ${pid} (${p.comm}) is not a JVM (no libjvm.so mapped): ${opts.command} needs a running Java program.` };
  return { ok: true, pid, process: p };
}
