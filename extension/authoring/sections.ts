// libbpf's program section names (libbpf 1.1 section_defs in libbpf.c, as read from the installed
// libbpf.a), so SEC("...") can be completed and checked before the object ever reaches libbpf.
// "+" entries take an optional "/target" suffix; the others must match exactly. Data sections
// (".maps", "license", ...) are not programs but are valid SEC() arguments too.

export interface SectionDef {
  /** the section name, or prefix when `extras` */
  name: string;
  /** accepts "name/..." (libbpf's "+" suffix) */
  extras: boolean;
  /** what the suffix means, e.g. "category/name" */
  suffix?: string;
  doc: string;
  /** libbpf attaches it by section name alone (auto-attach) */
  autoAttach: boolean;
}

const d = (name: string, doc: string, opts: Partial<SectionDef> = {}): SectionDef => ({ name, doc, extras: false, autoAttach: false, ...opts });
const plus = (name: string, suffix: string, doc: string, autoAttach = true): SectionDef => ({ name, doc, extras: true, suffix, autoAttach });

export const SECTION_DEFS: SectionDef[] = [
  d('socket', 'socket filter (SO_ATTACH_BPF)'),
  d('sk_reuseport/migrate', 'SO_REUSEPORT socket selection on migration'),
  d('sk_reuseport', 'SO_REUSEPORT socket selection'),
  plus('kprobe', 'function[+offset]', 'kernel function entry (kprobe). Not available on kernels without CONFIG_KPROBES.'),
  plus('uprobe', 'binary:function[+offset]', 'user-space function entry; attach by path:symbol, or leave bare and attach from user space'),
  plus('uprobe.s', 'binary:function', 'sleepable uprobe'),
  plus('kretprobe', 'function', 'kernel function return (kretprobe)'),
  plus('uretprobe', 'binary:function', 'user-space function return'),
  plus('uretprobe.s', 'binary:function', 'sleepable uretprobe'),
  plus('kprobe.multi', 'pattern', 'many kernel functions at once (fprobe)'),
  plus('kretprobe.multi', 'pattern', 'many kernel function returns at once'),
  plus('ksyscall', 'syscall', 'syscall entry through its kprobe, arch-independent'),
  plus('kretsyscall', 'syscall', 'syscall return through its kretprobe'),
  plus('usdt', 'binary:provider:name', 'USDT (static user-space tracepoint); use BPF_USDT() for arguments'),
  d('tc', 'traffic control classifier (SCHED_CLS)'),
  d('classifier', 'traffic control classifier (legacy name of "tc")'),
  d('action', 'traffic control action (SCHED_ACT)'),
  plus('tracepoint', 'category/name', 'kernel tracepoint, e.g. tracepoint/sched/sched_switch; ctx is struct trace_event_raw_<name> *'),
  plus('tp', 'category/name', 'kernel tracepoint (short form of "tracepoint")'),
  plus('raw_tracepoint', 'name', 'raw tracepoint: ctx is struct bpf_raw_tracepoint_args * (use BPF_PROG)'),
  plus('raw_tp', 'name', 'raw tracepoint (short form of "raw_tracepoint")'),
  plus('raw_tracepoint.w', 'name', 'writable raw tracepoint'),
  plus('raw_tp.w', 'name', 'writable raw tracepoint (short form)'),
  plus('tp_btf', 'name', 'BTF-typed tracepoint: typed arguments via BPF_PROG, e.g. tp_btf/sched_switch'),
  plus('fentry', 'function', 'kernel function entry through BPF trampoline (BTF-typed)'),
  plus('fmod_ret', 'function', 'modify a kernel function return value'),
  plus('fexit', 'function', 'kernel function exit with arguments and return value'),
  plus('fentry.s', 'function', 'sleepable fentry'),
  plus('fmod_ret.s', 'function', 'sleepable fmod_ret'),
  plus('fexit.s', 'function', 'sleepable fexit'),
  plus('freplace', 'function', 'replace a BPF function (extension program)', false),
  plus('lsm', 'hook', 'LSM hook'),
  plus('lsm.s', 'hook', 'sleepable LSM hook'),
  plus('lsm_cgroup', 'hook', 'per-cgroup LSM hook', false),
  plus('iter', 'target', 'BPF iterator, e.g. iter/task'),
  plus('iter.s', 'target', 'sleepable BPF iterator'),
  d('syscall', 'program run with BPF_PROG_RUN (loader programs)'),
  d('xdp.frags/devmap', 'XDP program for a devmap, multi-buffer'),
  d('xdp/devmap', 'XDP program for a devmap'),
  d('xdp.frags/cpumap', 'XDP program for a cpumap, multi-buffer'),
  d('xdp/cpumap', 'XDP program for a cpumap'),
  d('xdp.frags', 'XDP, multi-buffer aware'),
  d('xdp', 'XDP (eXpress Data Path)'),
  d('perf_event', 'perf event (e.g. cpu-clock sampling); ctx is struct bpf_perf_event_data *'),
  d('lwt_in', 'lightweight tunnel input'),
  d('lwt_out', 'lightweight tunnel output'),
  d('lwt_xmit', 'lightweight tunnel transmit'),
  d('lwt_seg6local', 'SRv6 local action'),
  d('sockops', 'socket operations'),
  d('sk_skb/stream_parser', 'sockmap stream parser'),
  d('sk_skb/stream_verdict', 'sockmap stream verdict'),
  d('sk_skb', 'sockmap skb program'),
  d('sk_msg', 'sockmap sendmsg program'),
  d('lirc_mode2', 'IR decoder'),
  d('flow_dissector', 'flow dissector'),
  d('cgroup_skb/ingress', 'cgroup ingress skb filter'),
  d('cgroup_skb/egress', 'cgroup egress skb filter'),
  d('cgroup/skb', 'cgroup skb filter'),
  ...['sock_create', 'sock_release', 'sock', 'post_bind4', 'post_bind6', 'bind4', 'bind6', 'connect4', 'connect6', 'sendmsg4', 'sendmsg6', 'recvmsg4', 'recvmsg6', 'getpeername4', 'getpeername6', 'getsockname4', 'getsockname6', 'sysctl', 'getsockopt', 'setsockopt', 'dev'].map((n) => d(`cgroup/${n}`, `cgroup ${n} hook`)),
  plus('struct_ops', 'name', 'struct_ops callback', false),
  d('sk_lookup', 'socket lookup'),
];

/** SEC() names that hold data rather than programs. */
export const DATA_SECTIONS: { name: string; doc: string; prefix?: boolean }[] = [
  { name: '.maps', doc: 'BTF-defined map (struct { __uint(type, ...); ... } name SEC(".maps"))' },
  { name: 'license', doc: 'program license; GPL-only helpers need a GPL-compatible license' },
  { name: 'version', doc: 'kernel version (obsolete)' },
  { name: '.rodata', doc: 'read-only globals', prefix: true },
  { name: '.data', doc: 'global variables', prefix: true },
  { name: '.bss', doc: 'zero-initialized globals', prefix: true },
  { name: '.kconfig', doc: 'extern Kconfig values' },
  { name: '.ksyms', doc: 'extern kernel symbols' },
  { name: '.struct_ops', doc: 'struct_ops map', prefix: true },
  { name: '.struct_ops.link', doc: 'struct_ops map attached through a link' },
];

export type SectionCheck = { ok: true; def?: SectionDef } | { ok: false; message: string; suggestion?: string };

/** libbpf's rule: exact match, or for "+" definitions, "name/anything". */
export function matchSection(sec: string): SectionDef | undefined {
  for (const def of SECTION_DEFS) {
    if (sec === def.name) return def;
    if (def.extras && sec.startsWith(def.name + '/')) return def;
  }
  return undefined;
}

export function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) dp[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) dp[i][j] = Math.min(dp[i - 1][j] + 1, dp[i][j - 1] + 1, dp[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  return dp[a.length][b.length];
}

export function checkSection(sec: string): SectionCheck {
  if (DATA_SECTIONS.some((s) => sec === s.name || (s.prefix && sec.startsWith(s.name + '.')))) return { ok: true };
  const def = matchSection(sec);
  if (def) {
    if (def.name === 'tracepoint' || def.name === 'tp') {
      const rest = sec.slice(def.name.length + 1);
      if (sec.includes('/') && !/^[\w-]+\/[\w-]+$/.test(rest)) {
        return { ok: false, message: `SEC("${sec}"): a tracepoint section is ${def.name}/<category>/<name>, e.g. ${def.name}/sched/sched_switch` };
      }
    }
    return { ok: true, def };
  }
  const head = sec.split('/')[0];
  let best: SectionDef | undefined;
  let bestD = Infinity;
  for (const def of SECTION_DEFS) {
    const dist = editDistance(head, def.name.split('/')[0]);
    if (dist < bestD) {
      bestD = dist;
      best = def;
    }
  }
  const suggestion = best && bestD <= 3 ? (best.extras ? `${best.name}${sec.includes('/') ? sec.slice(sec.indexOf('/')) : ''}` : best.name) : undefined;
  return {
    ok: false,
    message: `SEC("${sec}") is not a section libbpf knows, so the program would not load or attach${suggestion ? `. Did you mean "${suggestion}"?` : ''}`,
    suggestion,
  };
}
