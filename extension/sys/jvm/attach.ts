// The HotSpot dynamic-attach protocol, spoken directly so no JDK tool (jcmd, jattach) has to be
// on the PATH of the privileged helper. Written here because no npm package implements it.
//
// Linux flow (HotSpot attachListener_linux.cpp): a client creates `.attach_pidN` in the JVM's
// cwd (or /tmp), sends SIGQUIT; the JVM's signal handler sees the file and starts the Attach
// Listener, which listens on the unix socket `/tmp/.java_pidN`. N is the pid inside the JVM's
// pid namespace and /tmp is the JVM's own, so both are reached through /proc/PID/root and
// /proc/PID/cwd. A request is `<version>\0<command>\0<arg1>\0<arg2>\0<arg3>\0` (version 1,
// exactly three arguments, empty ones included); the reply is a status line ("0" = ok) followed
// by the command's output, and the JVM closes the socket when done. The JVM accepts a peer whose
// euid/egid match its own, or root.
import fs from 'node:fs';
import net from 'node:net';
import { inputError, privilegeError, StudioError, unsuitableError } from '../../protocol/errors';
import { assertOwnProcess } from '../ownership';
import { connectAs, createAs, openAs, processOwner, unlinkAs, type FileOwner } from '../asUser';

export const ATTACH_PROTOCOL_VERSION = '1';
export const ATTACH_ARG_COUNT = 3;

/** The bytes of one attach request, e.g. ("jcmd", ["Compiler.perfmap"]) → "1\0jcmd\0Compiler.perfmap\0\0\0". */
export function encodeAttachRequest(command: string, args: string[] = []): Buffer {
  if (!command) throw inputError('attach: the command is empty');
  if (args.length > ATTACH_ARG_COUNT) throw inputError(`attach: at most ${ATTACH_ARG_COUNT} arguments are allowed, got ${args.length}`);
  for (const s of [command, ...args]) if (s.includes('\0')) throw inputError('attach: a command or argument contains a NUL byte');
  const parts = [ATTACH_PROTOCOL_VERSION, command, ...args];
  while (parts.length < 2 + ATTACH_ARG_COUNT) parts.push('');
  return Buffer.from(parts.map((p) => `${p}\0`).join(''), 'utf8');
}

export interface AttachReply {
  /** 0 = the command ran */
  status: number;
  output: string;
}

/** Splits a reply into its status line and the output after it. */
export function parseAttachReply(text: string): AttachReply {
  const nl = text.indexOf('\n');
  const head = (nl < 0 ? text : text.slice(0, nl)).trim();
  if (!/^-?\d+$/.test(head)) throw new StudioError('internal', `attach: the JVM replied without a status line: ${JSON.stringify(text.slice(0, 200))}`);
  return { status: Number(head), output: nl < 0 ? '' : text.slice(nl + 1) };
}

/** The pid of a process inside its own pid namespace (the last NSpid field). */
export function namespacePid(pid: number, statusText?: string): number {
  let text = statusText;
  if (text === undefined) {
    try {
      text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      throw inputError(`no process with pid ${pid} is running`);
    }
  }
  const m = /^NSpid:\s+([\d\s]+)$/m.exec(text);
  if (!m) return pid;
  const ids = m[1].trim().split(/\s+/).map(Number);
  return ids[ids.length - 1];
}

export interface AttachOptions {
  /** total time allowed for starting the listener, connecting and the reply */
  timeoutMs?: number;
  /** path prefix standing in for /proc (tests) */
  procRoot?: string;
}

/** open(2)'s O_PATH (Linux; not in fs.constants): an fd to look at a socket file without opening it. */
const O_PATH = 0o10000000;

/** Whether `/tmp/.java_pidN` in the JVM's root is a socket of the JVM's owner (looked at as that owner, never followed). */
function ownSocket(owner: FileOwner, sock: string): boolean {
  let fd: number;
  try {
    fd = openAs(owner, sock, O_PATH);
  } catch {
    return false;
  }
  try {
    const st = fs.fstatSync(fd);
    return st.isSocket() && st.uid === owner.uid;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Whether the JVM listens on its attach socket: a JVM killed with SIGKILL leaves its socket file,
 * and a later JVM given the same pid (pids wrap at 32768 on many hosts) would look attachable
 * while nothing listens there. The connection is closed at once; the listener reads it as empty.
 */
function listening(owner: FileOwner, sock: string, pid: number): boolean {
  if (!ownSocket(owner, sock)) return false;
  try {
    fs.closeSync(connectAs(owner, sock, pid));
    return true;
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Refuses processes that would die of SIGQUIT instead of starting the listener. */
function checkAttachable(pid: number, proc: string): void {
  let maps = '';
  let cmdline: string[] = [];
  try {
    maps = fs.readFileSync(`${proc}/${pid}/maps`, 'utf8');
    cmdline = fs.readFileSync(`${proc}/${pid}/cmdline`, 'utf8').split('\0');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') throw privilegeError(`cannot read /proc/${pid}/maps (${code}): attaching to another user's JVM needs root`);
    throw inputError(`no process with pid ${pid} is running`);
  }
  if (!/\/libjvm\.so$/m.test(maps)) throw unsuitableError(`pid ${pid} is not a HotSpot JVM (no libjvm.so mapped): it has no attach listener`);
  if (cmdline.includes('-Xrs')) {
    throw unsuitableError(`pid ${pid} runs with -Xrs, so SIGQUIT would not start its attach listener (it could end the process instead); remove -Xrs or start the JVM with -XX:+StartAttachListener`);
  }
  if (cmdline.includes('-XX:+DisableAttachMechanism')) throw unsuitableError(`pid ${pid} runs with -XX:+DisableAttachMechanism: remove that flag to let tools attach`);
}

/** Whether a trigger name found taken is another client's attach under way: a regular file of the JVM's owner with one link, not a link. */
function triggerInUse(pid: number, owner: FileOwner, t: { base: 'cwd' | 'root'; file: string }): boolean {
  try {
    const st = fs.lstatSync(t.base === 'cwd' ? `/proc/${pid}/cwd/${t.file}` : `/proc/${pid}/root${t.file}`);
    return st.isFile() && st.uid === owner.uid && st.nlink === 1;
  } catch {
    return false;
  }
}

/**
 * Starts the JVM's attach listener if it is not running yet; returns the socket's path inside the
 * JVM's root. The trigger file is created, and removed, as the JVM's owner inside its root
 * (extension/sys/asUser.ts): exclusively and never through a link, so a planted symlink or
 * hardlink named .attach_pidN makes the attach fail instead of root truncating its target.
 */
async function startListener(pid: number, nspid: number, owner: FileOwner, deadline: number): Promise<string> {
  const sock = `/tmp/.java_pid${nspid}`;
  if (listening(owner, sock, pid)) return sock;
  const name = `.attach_pid${nspid}`;
  const triggers: { base: 'cwd' | 'root'; file: string }[] = [
    { base: 'cwd', file: name },
    { base: 'root', file: `/tmp/${name}` },
  ];
  let trigger: { base: 'cwd' | 'root'; file: string } | undefined;
  const failures: string[] = [];
  const taken: typeof triggers = [];
  for (const t of triggers) {
    try {
      fs.closeSync(createAs(owner, t.file, 0o660, t.base));
      trigger = t;
      break;
    } catch (e) {
      // read-only cwd, or a name already taken (another client attaching, or a link someone planted): try /tmp
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') taken.push(t);
      failures.push(`${t.base === 'cwd' ? `${name} in its working directory` : t.file}: ${code ?? (e as Error).message}`);
    }
  }
  // Both names taken by other clients' triggers (sessions started at once): their signal starts the
  // listener, and this one waits for it too. A planted link is no client's: refused at once.
  if (!trigger && !taken.some((t) => triggerInUse(pid, owner, t))) throw privilegeError(`cannot create the attach trigger of pid ${pid} as its owner uid ${owner.uid} (${failures.join('; ')}): remove what is in the way, or start the JVM with -XX:+StartAttachListener`);
  try {
    process.kill(pid, 'SIGQUIT');
    // The listener thread starts within milliseconds on an idle JVM; a busy one (or one in a
    // long safepoint) may take seconds. Re-signal now and then, as jattach does.
    let n = 0;
    while (Date.now() < deadline) {
      await sleep(25);
      if (listening(owner, sock, pid)) return sock;
      if (++n % 40 === 0) process.kill(pid, 'SIGQUIT');
    }
  } finally {
    try {
      if (trigger) unlinkAs(owner, trigger.file, trigger.base);
    } catch {
      /* already gone */
    }
  }
  throw new StudioError('unsuitable', `the JVM (pid ${pid}) did not open its attach socket ${sock}: it may still be starting, or run with -XX:+DisableAttachMechanism`);
}

/**
 * Talks to the attach socket as the JVM's owner: the socket must be that owner's and the process
 * listening on it must be the JVM itself (SO_PEERCRED), so a socket planted in its /tmp, or a
 * /tmp that leads elsewhere, is never spoken to.
 */
function exchange(owner: FileOwner, pid: number, sock: string, request: Buffer, deadline: number): Promise<string> {
  let fd: number;
  try {
    fd = connectAs(owner, sock, pid);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EPERM' || code === 'EACCES') return Promise.reject(privilegeError(`refused to talk to ${sock} of pid ${pid}: it is not a socket of uid ${owner.uid} opened by that JVM (${(e as Error).message})`));
    return Promise.reject(new StudioError('unsuitable', `connecting to the JVM's attach socket ${sock} (pid ${pid}): ${(e as Error).message}`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = new net.Socket({ fd, readable: true, writable: true });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new StudioError('unsuitable', `the JVM did not answer on ${sock} in time`));
    }, Math.max(100, deadline - Date.now()));
    s.end(request);
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new StudioError('unsuitable', `talking to the JVM's attach socket ${sock}: ${e.message}`));
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** Runs one attach command (e.g. "jcmd", ["Compiler.perfmap"]) in the JVM and returns its output. */
export async function attachCommand(pid: number, command: string, args: string[] = [], opts: AttachOptions = {}): Promise<string> {
  const proc = opts.procRoot ?? '/proc';
  const deadline = Date.now() + (opts.timeoutMs ?? 10000);
  const request = encodeAttachRequest(command, args);
  // Every attach request makes the JVM act (start a listener, write a perf map, load a library):
  // never for another user's JVM unless we act for root.
  assertOwnProcess(pid, `the JVM attach request "${command}"`);
  checkAttachable(pid, proc);
  const nspid = namespacePid(pid, fs.readFileSync(`${proc}/${pid}/status`, 'utf8'));
  const owner = processOwner(pid);
  const sock = await startListener(pid, nspid, owner, deadline);
  const reply = parseAttachReply(await exchange(owner, pid, sock, request, deadline));
  if (reply.status !== 0) throw new StudioError('unsuitable', `the JVM (pid ${pid}) refused "${command} ${args.join(' ')}" (status ${reply.status}): ${reply.output.trim() || 'no message'}`);
  return reply.output;
}

/** `jcmd PID <line>`, e.g. jcmd(pid, "Compiler.perfmap"). */
export function jcmd(pid: number, line: string, opts?: AttachOptions): Promise<string> {
  return attachCommand(pid, 'jcmd', [line], opts);
}

/** Asks the JVM to write /tmp/perf-<nspid>.map (its mount namespace); returns that file's path as seen from here. */
export async function writePerfMap(pid: number, opts?: AttachOptions): Promise<string> {
  const out = await jcmd(pid, 'Compiler.perfmap', opts);
  // jcmd reports failures of the diagnostic command in its output with status 0.
  if (/Unknown diagnostic command|IllegalArgumentException/.test(out)) {
    throw unsuitableError(`this JVM has no Compiler.perfmap command (it needs JDK 17 or newer); start it with -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit or use a newer JDK`);
  }
  const proc = opts?.procRoot ?? '/proc';
  return `${proc}/${pid}/root/tmp/perf-${namespacePid(pid, fs.readFileSync(`${proc}/${pid}/status`, 'utf8'))}.map`;
}

/** The JVM's value of a boolean -XX flag via the `printflag` attach command ("-XX:+Name"/"-XX:-Name"). */
export async function boolFlag(pid: number, name: string, opts?: AttachOptions): Promise<boolean | undefined> {
  const out = await attachCommand(pid, 'printflag', [name], opts);
  const m = new RegExp(`-XX:([+-])${name}\\b`).exec(out);
  return m ? m[1] === '+' : undefined;
}
