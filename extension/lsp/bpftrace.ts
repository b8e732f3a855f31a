// Completion and hover for bpftrace (.bt) scripts: probe types, builtin variables and functions.
// bpftrace has no language server of its own; this is the small, static part of its reference
// (bpftrace(8)) that helps while typing. Pure.
import type { Completion, Hover, Item } from './analysis';

const PROBES: [string, string][] = [
  ['BEGIN', 'runs once when the script starts'],
  ['END', 'runs once when the script ends (Ctrl-C or exit())'],
  ['tracepoint:', 'kernel tracepoint: tracepoint:category:name; fields in args.*'],
  ['rawtracepoint:', 'raw kernel tracepoint: rawtracepoint:name'],
  ['kprobe:', 'kernel function entry (needs CONFIG_KPROBES: not available on every kernel)'],
  ['kretprobe:', 'kernel function return (needs CONFIG_KPROBES)'],
  ['kfunc:', 'kernel function entry through BTF (fentry); typed args.*'],
  ['kretfunc:', 'kernel function return through BTF (fexit); args.* and retval'],
  ['fentry:', 'kernel function entry through BTF (newer name of kfunc)'],
  ['fexit:', 'kernel function return through BTF (newer name of kretfunc)'],
  ['uprobe:', 'user function entry: uprobe:/path/to/binary:function; arguments arg0..argN'],
  ['uretprobe:', 'user function return: uretprobe:/path:function; retval'],
  ['usdt:', 'USDT probe: usdt:/path/to/binary:provider:name; arguments arg0..argN'],
  ['profile:', 'timed sampling on every CPU: profile:hz:99, profile:ms:10'],
  ['interval:', 'timed on one CPU: interval:s:1, interval:ms:100'],
  ['software:', 'software perf event: software:cpu-clock:100000'],
  ['hardware:', 'hardware perf event: hardware:cache-misses:1000000'],
  ['watchpoint:', 'memory watchpoint: watchpoint:addr:len:rwx'],
  ['iter:', 'BPF iterator: iter:task, iter:task_file'],
];

const BUILTINS: [string, string][] = [
  ['pid', 'process id (thread group id)'],
  ['tid', 'thread id'],
  ['uid', 'user id'],
  ['gid', 'group id'],
  ['nsecs', 'nanosecond timestamp (monotonic)'],
  ['elapsed', 'nanoseconds since the script started'],
  ['cpu', 'processor id'],
  ['comm', 'process name'],
  ['kstack', 'kernel stack trace'],
  ['ustack', 'user stack trace'],
  ['arg0', 'first probe argument (uprobe, usdt, kprobe); arg1..argN likewise'],
  ['args', 'typed tracepoint/kfunc arguments: args.field (args->field in older versions)'],
  ['retval', 'return value (kretprobe, uretprobe, kretfunc)'],
  ['func', 'name of the traced function'],
  ['probe', 'full name of the probe'],
  ['curtask', 'current task_struct pointer'],
  ['cgroup', 'cgroup id of the current process'],
  ['rand', 'random 32-bit number'],
  ['$1', 'first positional parameter of the script'],
];

const FUNCTIONS: [string, string, string][] = [
  ['printf', 'printf(fmt, ...)', 'print formatted text'],
  ['print', 'print(@map | value)', 'print a map or value'],
  ['time', 'time(fmt)', 'print the current time'],
  ['join', 'join(char *arr[])', 'print an array of strings joined by spaces'],
  ['str', 'str(char *s [, int len])', 'read a NUL-terminated string from memory'],
  ['buf', 'buf(void *d [, int len])', 'read a buffer as hex'],
  ['ksym', 'ksym(addr)', 'kernel symbol of an address'],
  ['usym', 'usym(addr)', 'user symbol of an address'],
  ['kaddr', 'kaddr(name)', 'address of a kernel symbol'],
  ['uaddr', 'uaddr(name)', 'address of a user symbol'],
  ['ntop', 'ntop([af,] addr)', 'IP address to text'],
  ['system', 'system(fmt, ...)', 'run a shell command (needs --unsafe)'],
  ['exit', 'exit()', 'end the script'],
  ['cat', 'cat(filename)', 'print a file'],
  ['signal', 'signal(sig)', 'send a signal to the current task (needs --unsafe)'],
  ['strncmp', 'strncmp(a, b, n)', 'compare strings'],
  ['sizeof', 'sizeof(type | expr)', 'size in bytes'],
  ['count', '@x = count()', 'map aggregation: number of calls'],
  ['sum', '@x = sum(n)', 'map aggregation: sum'],
  ['avg', '@x = avg(n)', 'map aggregation: average'],
  ['min', '@x = min(n)', 'map aggregation: minimum'],
  ['max', '@x = max(n)', 'map aggregation: maximum'],
  ['stats', '@x = stats(n)', 'map aggregation: count, average and total'],
  ['hist', '@x = hist(n)', 'map aggregation: power-of-2 (log2) histogram'],
  ['lhist', '@x = lhist(n, min, max, step)', 'map aggregation: linear histogram'],
  ['delete', 'delete(@map[key])', 'delete a map element'],
  ['clear', 'clear(@map)', 'delete every element of a map'],
  ['zero', 'zero(@map)', 'set every value of a map to zero'],
];

export function bpftraceComplete(text: string, offset: number): Completion | undefined {
  const line = text.slice(text.lastIndexOf('\n', offset - 1) + 1, offset);
  const word = /([\w$]*)$/.exec(line)![1];
  const atLineStart = /^\s*[\w$]*$/.test(line);
  const items: Item[] = [];
  if (atLineStart) items.push(...PROBES.map(([l, d]) => ({ label: l, kind: 'module' as const, documentation: d })));
  items.push(...BUILTINS.map(([l, d]) => ({ label: l, kind: 'variable' as const, documentation: d })));
  items.push(...FUNCTIONS.map(([l, sig, d]) => ({ label: l, kind: 'function' as const, detail: sig, documentation: d })));
  const filtered = items.filter((i) => i.label.startsWith(word));
  return filtered.length ? { replaceStart: offset - word.length, items: filtered } : undefined;
}

export function bpftraceHover(text: string, offset: number): Hover | undefined {
  let s = offset;
  let e = offset;
  while (s > 0 && /[\w$]/.test(text[s - 1])) s--;
  while (e < text.length && /[\w$]/.test(text[e])) e++;
  const w = text.slice(s, e);
  if (!w) return undefined;
  const p = PROBES.find(([l]) => l === w || l === `${w}:`);
  if (p && (text[e] === ':' || p[0] === w)) return { markdown: `**${p[0]}** probe: ${p[1]}`, start: s, end: e };
  const b = BUILTINS.find(([l]) => l === w);
  if (b) return { markdown: `**${b[0]}**: ${b[1]}`, start: s, end: e };
  const f = FUNCTIONS.find(([l]) => l === w);
  if (f) return { markdown: `\`${f[1]}\`\n\n${f[2]}`, start: s, end: e };
  return undefined;
}
