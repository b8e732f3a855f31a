// Whether a process's seccomp filters let the injected leak tracer run. A filter may kill the
// process, or make a call of ours fail, for a system call the process itself never makes; so
// injection goes ahead only when every filter of every thread returns ALLOW for every system call
// the injected code makes (the loader's dlopen, the library's start, its allocator wrappers and
// unwinder, its stop), for every argument value those calls may carry. Anything else (an action
// other than ALLOW, an instruction this evaluator does not know, a result that depends on a value
// it cannot pin, a program too branchy to follow) is a refusal: uprobes then, which never run
// code in the process.
//
// The filters are the kernel's classic BPF programs, read as root by the injector
// (`ebpf-studio-inject filters`, PTRACE_SECCOMP_GET_FILTER) and evaluated here over struct
// seccomp_data { u32 nr; u32 arch; u64 instruction_pointer; u64 args[6]; }. Values the injected
// code does not fix (most arguments, the instruction pointer) are unknown: a jump on an unknown
// value follows both ways, and every path must end in ALLOW.

/** AUDIT_ARCH_X86_64: the injector and the library are built for x86-64 only. */
export const AUDIT_ARCH_X86_64 = 0xc000003e;

/** One argument as the injected code passes it: a fixed value, or undefined for any value. */
export type ArgValue = bigint | undefined;

export interface SyscallUse {
  name: string;
  nr: number;
  /** up to six; missing ones are unknown */
  args?: ArgValue[];
}

/**
 * The system calls the injected code makes in the process, x86-64 numbers, as traced
 * (raw_syscalls:sys_enter) during an injection, a leak session with the unwinder and a stop, and
 * from the library's sources: dlopen's loading (openat, read, fstat/newfstatat, pread64 by older
 * loaders, mmap, mprotect, munmap, close), the library's start (geteuid, getpid, fcntl F_DUPFD_CLOEXEC,
 * ftruncate, flock), its hot path (futex and sched_yield on its locks, clock_gettime where the
 * vDSO is not used, the allocator it forwards to: brk, mmap, madvise; libunwind's memory checks:
 * pipe2, mincore, read, write, rt_sigprocmask), nanosleep while it waits for a stop.
 */
export const INJECTED_SYSCALLS: SyscallUse[] = [
  { name: 'read', nr: 0 },
  { name: 'write', nr: 1 },
  { name: 'close', nr: 3 },
  { name: 'fstat', nr: 5 },
  { name: 'mmap', nr: 9 },
  { name: 'mprotect', nr: 10 },
  { name: 'munmap', nr: 11 },
  { name: 'brk', nr: 12 },
  { name: 'rt_sigprocmask', nr: 14 },
  { name: 'pread64', nr: 17 },
  { name: 'sched_yield', nr: 24 },
  { name: 'mincore', nr: 27 },
  { name: 'madvise', nr: 28 },
  { name: 'nanosleep', nr: 35 },
  { name: 'getpid', nr: 39 },
  // F_DUPFD_CLOEXEC to fd 1000 or above: the only fcntl the library makes
  { name: 'fcntl', nr: 72, args: [undefined, 0x406n, 1000n] },
  { name: 'flock', nr: 73 },
  { name: 'ftruncate', nr: 77 },
  { name: 'geteuid', nr: 107 },
  { name: 'futex', nr: 202 },
  { name: 'clock_gettime', nr: 228 },
  { name: 'clock_nanosleep', nr: 230 },
  { name: 'openat', nr: 257 },
  { name: 'newfstatat', nr: 262 },
  { name: 'pipe2', nr: 293 },
];

export const SECCOMP_RET_ALLOW = 0x7fff0000;
const ACTIONS: [number, string][] = [
  [0x80000000, 'KILL_PROCESS'],
  [0x00000000, 'KILL_THREAD'],
  [0x00030000, 'TRAP'],
  [0x00050000, 'ERRNO'],
  [0x7fc00000, 'USER_NOTIF'],
  [0x7ff00000, 'TRACE'],
  [0x7ffc0000, 'LOG'],
  [0x7fff0000, 'ALLOW'],
];

/** The action's name (KILL_PROCESS, ERRNO, …) of a filter's return value. */
export function actionName(ret: number): string {
  const action = (ret & 0xffff0000) >>> 0;
  return ACTIONS.find(([v]) => v === action)?.[1] ?? `action 0x${action.toString(16)}`;
}

/** struct sock_filter, as the kernel hands it out (little-endian, 8 bytes). */
export interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

export function decodeFilter(bytes: Buffer): Insn[] {
  if (bytes.length === 0 || bytes.length % 8) throw new Error(`a filter of ${bytes.length} bytes is not whole instructions`);
  const out: Insn[] = [];
  for (let o = 0; o < bytes.length; o += 8) out.push({ code: bytes.readUInt16LE(o), jt: bytes[o + 2], jf: bytes[o + 3], k: bytes.readUInt32LE(o + 4) });
  return out;
}

/** What every path of a filter returns for a call: the return values, or why it cannot be told. */
export type Outcome = { returns: number[] } | { unknown: string };

/** An unknown 32-bit value. */
const ANY = undefined;
type Val = number | undefined;

/** The 16 words of struct seccomp_data for a call: known ones as numbers, the rest unknown. */
function dataWords(use: SyscallUse, arch: number): Val[] {
  const words: Val[] = [use.nr >>> 0, arch >>> 0, ANY, ANY];
  for (let i = 0; i < 6; i++) {
    const v = use.args?.[i];
    if (v === undefined) words.push(ANY, ANY);
    else words.push(Number(v & 0xffffffffn), Number((v >> 32n) & 0xffffffffn));
  }
  return words;
}

interface State {
  pc: number;
  a: Val;
  x: Val;
  mem: Val[];
}

/** Steps over all paths together; past this the filter is called too branchy (unsafe). */
const STEP_BUDGET = 1_000_000;

/** Evaluates one filter on one call over every path its unknown inputs open. */
export function evaluate(prog: Insn[], use: SyscallUse, arch = AUDIT_ARCH_X86_64): Outcome {
  const data = dataWords(use, arch);
  const returns = new Set<number>();
  const todo: State[] = [{ pc: 0, a: 0, x: 0, mem: new Array<Val>(16).fill(0) }];
  let steps = 0;
  while (todo.length) {
    const s = todo.pop()!;
    for (;;) {
      if (++steps > STEP_BUDGET) return { unknown: `the filter has more paths than are followed (${STEP_BUDGET} steps)` };
      const insn = prog[s.pc];
      if (!insn) return { unknown: `the filter runs past its end at instruction ${s.pc}` };
      const r = step(insn, s, data);
      if (r === 'next') continue;
      if (typeof r === 'string') return { unknown: `instruction ${s.pc} (code 0x${insn.code.toString(16)}): ${r}` };
      if ('ret' in r) {
        returns.add(r.ret);
        break;
      }
      // a jump on an unknown value: both ways
      todo.push({ pc: r.fork, a: s.a, x: s.x, mem: [...s.mem] });
    }
  }
  return { returns: [...returns] };
}

type StepResult = 'next' | { ret: number } | { fork: number } | string;

/** One instruction: updates s (pc included); a return, a fork to follow later, or why not. */
function step(insn: Insn, s: State, data: Val[]): StepResult {
  const { code, k } = insn;
  switch (code & 0x07) {
    case 0x00: // LD
    case 0x01: {
      // LDX
      const v = load(code, k, s, data);
      if (typeof v === 'string') return v;
      if ((code & 0x07) === 0x00) s.a = v.v;
      else s.x = v.v;
      s.pc++;
      return 'next';
    }
    case 0x02: // ST
    case 0x03: // STX
      if (k >= 16) return 'scratch memory index out of range';
      s.mem[k] = (code & 0x07) === 0x02 ? s.a : s.x;
      s.pc++;
      return 'next';
    case 0x04: {
      const v = alu(code, s.a, (code & 0x08) ? s.x : k);
      if (typeof v === 'string') return v;
      s.a = v.v;
      s.pc++;
      return 'next';
    }
    case 0x05:
      return jump(insn, s);
    case 0x06: {
      const src = code & 0x18;
      const v = src === 0x00 ? k : src === 0x10 ? s.a : undefined;
      if (code & ~0x1e || (src !== 0x00 && src !== 0x10)) return 'an unknown return';
      if (v === undefined) return 'returns a value it computed from an unknown input';
      return { ret: v >>> 0 };
    }
    default: {
      // MISC: TAX 0x07, TXA 0x87
      if (code === 0x07) s.x = s.a;
      else if (code === 0x87) s.a = s.x;
      else return 'an unknown MISC instruction';
      s.pc++;
      return 'next';
    }
  }
}

/** LD/LDX: W ABS on seccomp_data, IMM, MEM, W LEN; nothing else is a seccomp instruction. */
function load(code: number, k: number, s: State, data: Val[]): { v: Val } | string {
  const ldx = (code & 0x07) === 0x01;
  const mode = code & 0xe0;
  const size = code & 0x18;
  if (mode === 0x00 && size === 0) return { v: k >>> 0 };
  if (mode === 0x60 && size === 0) return k < 16 ? { v: s.mem[k] } : 'scratch memory index out of range';
  if (mode === 0x80 && size === 0) return { v: 64 }; // sizeof(struct seccomp_data)
  if (!ldx && mode === 0x20 && size === 0) {
    if (k % 4 || k >= 64) return `a load at offset ${k} of seccomp_data`;
    return { v: data[k / 4] };
  }
  return 'a load mode seccomp does not have';
}

function alu(code: number, a: Val, b: Val): { v: Val } | string {
  const op = code & 0xf0;
  if (op === 0x80) return { v: a === undefined ? undefined : (-a) >>> 0 }; // NEG
  if ((op === 0x30 || op === 0x90) && b === 0) return 'a division by zero';
  if (a === undefined || b === undefined) {
    if (op > 0xa0) return 'an unknown ALU operation';
    // a division by an unknown divisor may be one by zero, which ends the program with 0 (KILL)
    if ((op === 0x30 || op === 0x90) && b === undefined) return 'a division by a value it cannot pin';
    return { v: undefined };
  }
  switch (op) {
    case 0x00: return { v: (a + b) >>> 0 };
    case 0x10: return { v: (a - b) >>> 0 };
    case 0x20: return { v: Number((BigInt(a) * BigInt(b)) & 0xffffffffn) };
    case 0x30: return b === 0 ? 'a division by zero' : { v: Math.floor(a / b) >>> 0 };
    case 0x40: return { v: (a | b) >>> 0 };
    case 0x50: return { v: (a & b) >>> 0 };
    case 0x60: return b >= 32 ? 'a shift by 32 or more' : { v: (a << b) >>> 0 };
    case 0x70: return b >= 32 ? 'a shift by 32 or more' : { v: a >>> b };
    case 0x90: return b === 0 ? 'a division by zero' : { v: a % b };
    case 0xa0: return { v: (a ^ b) >>> 0 };
    default: return 'an unknown ALU operation';
  }
}

function jump(insn: Insn, s: State): StepResult {
  const { code, k, jt, jf } = insn;
  const op = code & 0xf0;
  if (op === 0x00) {
    if (code !== 0x05) return 'an unknown jump';
    s.pc += 1 + k;
    return 'next';
  }
  const b = code & 0x08 ? s.x : k >>> 0;
  const a = s.a;
  if (op > 0x40) return 'an unknown jump';
  const yes = s.pc + 1 + jt;
  const no = s.pc + 1 + jf;
  if (a === undefined || b === undefined) {
    if (yes === no) {
      s.pc = yes;
      return 'next';
    }
    s.pc = yes;
    return { fork: no };
  }
  const taken = op === 0x10 ? a === b : op === 0x20 ? a > b : op === 0x30 ? a >= b : (a & b) !== 0;
  s.pc = taken ? yes : no;
  return 'next';
}

/** A thread's filters as the injector printed them: the ids of the distinct filters, the most recent first. */
export interface ProcessFilters {
  /** threads in strict mode (Seccomp: 1), which only read, write, exit and sigreturn */
  strict: number[];
  threads: Map<number, number[]>;
  filters: Map<number, Insn[]>;
}

/** Parses `ebpf-studio-inject filters` output; throws on anything it does not expect. */
export function parseFilters(text: string): ProcessFilters {
  const out: ProcessFilters = { strict: [], threads: new Map(), filters: new Map() };
  let ok = false;
  for (const line of text.split('\n')) {
    if (!line) continue;
    let m: RegExpExecArray | null;
    if ((m = /^thread (\d+) mode (\d+)$/.exec(line))) {
      if (m[2] !== '0') out.strict.push(Number(m[1]));
    } else if ((m = /^thread (\d+)((?: \d+)*)$/.exec(line))) {
      out.threads.set(Number(m[1]), m[2].trim() ? m[2].trim().split(' ').map(Number) : []);
    } else if ((m = /^filter (\d+) ([0-9a-f]+)$/.exec(line))) {
      out.filters.set(Number(m[1]), decodeFilter(Buffer.from(m[2], 'hex')));
    } else if (line === 'ok 0') {
      ok = true;
    } else {
      throw new Error(`unexpected line from the injector: ${line.slice(0, 80)}`);
    }
  }
  if (!ok) throw new Error('the injector did not finish its list of filters');
  for (const [tid, ids] of out.threads) for (const id of ids) if (!out.filters.has(id)) throw new Error(`thread ${tid} names filter ${id}, which is missing`);
  return out;
}

/**
 * Why the filters would not let the injected code run (naming the system call and the action),
 * or undefined when every filter of every thread returns ALLOW for every call of `uses`.
 */
export function filterRefusal(pf: ProcessFilters, uses: SyscallUse[] = INJECTED_SYSCALLS): string | undefined {
  if (pf.strict.length) return `thread ${pf.strict[0]} runs in strict seccomp mode, which kills it for any call but read, write, exit and sigreturn`;
  const seen = new Map<number, Map<string, string | undefined>>();
  for (const [tid, ids] of pf.threads) {
    for (const id of ids) {
      const prog = pf.filters.get(id)!;
      let verdicts = seen.get(id);
      if (!verdicts) seen.set(id, (verdicts = new Map()));
      for (const use of uses) {
        if (!verdicts.has(use.name)) verdicts.set(use.name, verdict(prog, use));
        const why = verdicts.get(use.name);
        if (why) return `the seccomp filter of thread ${tid} ${why}`;
      }
    }
  }
  return undefined;
}

function verdict(prog: Insn[], use: SyscallUse): string | undefined {
  const r = evaluate(prog, use);
  if ('unknown' in r) return `cannot be read for ${use.name}: ${r.unknown}`;
  const bad = r.returns.find((v) => v !== SECCOMP_RET_ALLOW);
  if (bad === undefined) return undefined;
  const name = actionName(bad);
  const data = name === 'ERRNO' ? ` ${bad & 0xffff}` : '';
  return `returns ${name}${data} for ${use.name}${r.returns.length > 1 ? ' (for some of its arguments)' : ''}`;
}
